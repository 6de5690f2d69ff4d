/**
 * Passkey ceremonies against the API's /v1/auth operations (docs/console.md "Signing in"): sign in,
 * accept an invite (its token is the URL's fragment, sent to the API in a body, never a URL), add a passkey
 * (after a step-up with a passkey the member already holds, when the session's last proof is not recent).
 * The browser's own JSON forms of WebAuthn (parse*OptionsFromJSON, credential.toJSON) carry the options and
 * answers: no library.
 */
export {};

const status = document.getElementById("passkey-status");
const say = (text: string, isError = false) => {
  if (!status) return;
  status.textContent = text;
  status.className = isError ? "error" : "";
};

async function post(url: string, body?: unknown): Promise<{ ok: boolean; status: number; data: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  return { ok: res.ok, status: res.status, data };
}

/**
 * What went wrong, in words. A browser answers NotAllowedError both when the person cancels or lets the request time
 * out and when this device holds no passkey for this site (it may not say which, on purpose: a site must not learn
 * whether someone has an account). Where a passkey was to be used (signing in, confirming), both are said plainly.
 */
type Ceremony = "sign-in" | "confirm" | "make";
function failure(error: unknown, ceremony: Ceremony): string {
  if (error instanceof DOMException && error.name === "NotAllowedError") {
    if (ceremony === "sign-in") {
      return "No passkey was used. Either this device has no passkey for this account (sign in on the device where you made one, or ask an owner or admin for an invite link to make one here), or the request was cancelled or timed out (try again).";
    }
    if (ceremony === "confirm") {
      return "No passkey was used to confirm. Either this device has no passkey of yours (add the new one from a device that has one), or the request was cancelled or timed out (try again).";
    }
    return "No passkey was made: the request was cancelled or timed out. Try again.";
  }
  if (error instanceof DOMException && error.name === "InvalidStateError") return "This device already holds a passkey of yours: add one from another device or security key.";
  return error instanceof Error ? error.message : String(error);
}

/** An assertion with a passkey for this site: `options` from a sign-in or step-up options call. */
async function assert(options: Record<string, unknown>): Promise<PublicKeyCredential> {
  const publicKey = PublicKeyCredential.parseRequestOptionsFromJSON(options as unknown as PublicKeyCredentialRequestOptionsJSON);
  return (await navigator.credentials.get({ publicKey })) as PublicKeyCredential;
}

async function create(optionsUrl: string, body?: unknown): Promise<PublicKeyCredential> {
  const options = await post(optionsUrl, body);
  // 404 or 410: an invite link that is unknown, used or expired.
  const advice = options.status === 404 || options.status === 410 ? ". Ask whoever invited you for a new link, or sign in if you have joined already." : "";
  if (!options.ok) throw new Error(`${String(options.data["error"] ?? `HTTP ${options.status}`)}${advice}`);
  const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(options.data as unknown as PublicKeyCredentialCreationOptionsJSON);
  return (await navigator.credentials.create({ publicKey })) as PublicKeyCredential;
}

document.getElementById("sign-in")?.addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.currentTarget as HTMLFormElement;
  try {
    say("Waiting for your passkey…");
    const options = await post("/v1/auth/sign-in/options");
    if (!options.ok) throw new Error(String(options.data["error"] ?? `HTTP ${options.status}`));
    const credential = await assert(options.data);
    const signedIn = await post("/v1/auth/sign-in", { credential: credential.toJSON() });
    if (!signedIn.ok) throw new Error(`Sign-in refused: ${String(signedIn.data["error"] ?? signedIn.status)}. Use a passkey made for this account.`);
    location.assign(form.dataset["next"] ?? "/console");
  } catch (error) {
    say(failure(error, "sign-in"), true);
  }
});

document.getElementById("accept-invite")?.addEventListener("submit", async (event) => {
  event.preventDefault();
  const token = location.hash.slice(1);
  const name = (document.getElementById("member-name") as HTMLInputElement).value.trim();
  if (!token) return say("This link has no invite in it: open the whole link you were sent.", true);
  try {
    say("Making your passkey…");
    const credential = await create("/v1/auth/invites/options", { token });
    const accepted = await post("/v1/auth/invites/accept", { token, name, credential: credential.toJSON() });
    if (!accepted.ok) throw new Error(`The invite was not accepted: ${String(accepted.data["error"] ?? accepted.status)}.`);
    history.replaceState(null, "", "/console/invite");
    location.assign("/console");
  } catch (error) {
    say(failure(error, "make"), true);
  }
});

document.getElementById("add-passkey")?.addEventListener("submit", async (event) => {
  event.preventDefault();
  const name = (document.getElementById("passkey-name") as HTMLInputElement).value.trim();
  let ceremony: Ceremony = "confirm";
  try {
    // A new passkey outlives this session: the API wants a recent proof with one the member already holds.
    say("Confirm with a passkey you already hold…");
    const options = await post("/v1/auth/step-up/options");
    if (!options.ok) throw new Error(String(options.data["error"] ?? `HTTP ${options.status}`));
    const proof = await post("/v1/auth/step-up", { credential: (await assert(options.data)).toJSON() });
    if (!proof.ok) throw new Error(`Not confirmed: ${String(proof.data["error"] ?? proof.status)}.`);
    say("Making a passkey…");
    ceremony = "make";
    const credential = await create("/v1/me/passkeys/options");
    const added = await post("/v1/me/passkeys", { credential: credential.toJSON(), ...(name ? { name } : {}) });
    if (!added.ok) throw new Error(`The passkey was not added: ${String(added.data["error"] ?? added.status)}.`);
    say("The passkey was added.");
    location.assign("/console/members");
  } catch (error) {
    say(failure(error, ceremony), true);
  }
});
