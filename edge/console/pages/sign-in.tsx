/**
 * Sign in with a passkey, and accept an invite (the link's token travels in the URL's fragment, which
 * never reaches a server). Both are WebAuthn ceremonies run by edge/console/browser/passkeys.ts against
 * the API's /v1/auth operations; the page itself holds no secret.
 */
import type { Hono } from "hono";
import type { AppEnv } from "../../env.ts";
import { apiCaller } from "../api.ts";
import { page } from "../layout.tsx";

/** Where to go after signing in: a console path only, never another site. */
export function safeNext(next: string | undefined): string {
  return next && /^\/console(\/[A-Za-z0-9_\-/]*)?(\?[^#]*)?$/.test(next) ? next : "/console";
}

export function registerSignInPages(app: Hono<AppEnv>): void {
  app.get("/console/sign-in", (c) =>
    page(
      c,
      { title: "Sign in", scripts: ["passkeys.js"] },
      <form id="sign-in" data-next={safeNext(c.req.query("next"))} method="post" action="/console/sign-in">
        <p>Sign in with the passkey you made when you joined: your device will ask for your fingerprint, face or PIN.</p>
        <button type="submit">Sign in with a passkey</button>
        <p id="passkey-status" role="status" aria-live="polite"></p>
        <noscript>
          <p class="error">Passkeys need JavaScript: turn it on for this site to sign in.</p>
        </noscript>
        <h2>No passkey on this device?</h2>
        <p>
          A passkey is made when you join, on the device you join with, and there is no password to fall back on. Sign in on that device, or ask an owner or
          an admin of your account for an invite link: open it on this device to make a passkey here. Someone already signed in on another device can add one
          for this device from the Members page.
        </p>
      </form>,
    ),
  );

  app.get("/console/invite", (c) =>
    page(
      c,
      { title: "Join the account", scripts: ["passkeys.js"] },
      <form id="accept-invite" method="post" action="/console/invite">
        <p>You were invited to this account. Give your name, then make a passkey on this device: it is how you will sign in, with no password.</p>
        <label for="member-name">Your name</label>
        <input id="member-name" name="name" required maxlength={100} autocomplete="name" />
        <button type="submit">Make a passkey and join</button>
        <p id="passkey-status" role="status" aria-live="polite"></p>
        <noscript>
          <p class="error">Passkeys need JavaScript: turn it on for this site to join.</p>
        </noscript>
      </form>,
    ),
  );

  app.post("/console/sign-out", async (c) => {
    const api = apiCaller(app, c);
    const answer = await api("POST", "/v1/auth/sign-out");
    for (const cookie of answer.setCookies) c.header("Set-Cookie", cookie, { append: true });
    return c.redirect("/console/sign-in", 303);
  });
}
