/** A drop zone of the console's list forms (Lists and Enrich a list): highlighted while a file is over it, and the first file dropped handed to `take`. */
export function onDroppedFile(drop: HTMLElement, take: (file: File) => void): void {
  for (const name of ["dragenter", "dragover"]) {
    drop.addEventListener(name, (event) => {
      event.preventDefault();
      drop.classList.add("over");
    });
  }
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    const dropped = (event as DragEvent).dataTransfer?.files[0];
    if (dropped) take(dropped);
  });
}
