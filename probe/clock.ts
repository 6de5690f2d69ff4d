/**
 * The probe's clock: milliseconds on the Unix scale, but monotonic. Deadlines, pacing and the
 * durations it reports are differences of this clock, so a step of the wall clock (NTP, a VM
 * resumed) can neither stretch a deadline nor make a duration negative. Signature timestamps, which
 * are compared with another machine's wall clock, use Date.now().
 */
const origin = performance.timeOrigin;

export function monotonicNow(): number {
  return Math.floor(origin + performance.now());
}
