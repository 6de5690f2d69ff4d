/**
 * The console (docs/console.md): pages under /console rendered on the server, each using the API's own
 * operations through the member's session (./api.ts). One Content-Security-Policy for all of them,
 * scripts by nonce only, no inline handlers or styles, frame-ancestors 'none'; static files (CSS,
 * small scripts) come from Workers static assets under /console/assets/.
 */
import type { Hono } from "hono";
import { csrf } from "hono/csrf";
import { NONCE, secureHeaders } from "hono/secure-headers";
import { JOB_INPUT_ERRORS, JOB_LIMITS } from "../../shared/jobs.ts";
import { LOOKUP_JOB_MESSAGES } from "../../shared/lookup-jobs.ts";
import { limitRequestBody } from "../body-limit.ts";
import { loadConfig, type AppEnv } from "../env.ts";
import { page } from "./layout.tsx";
import { registerAccountPages } from "./pages/account.tsx";
import { registerCheckPages } from "./pages/check.tsx";
import { registerFeedbackPages } from "./pages/feedback.tsx";
import { registerFindPages } from "./pages/find.tsx";
import { registerMemberPages } from "./pages/members.tsx";
import { registerKeyPages } from "./pages/keys.tsx";
import { registerListPages } from "./pages/lists.tsx";
import { ENRICH_FORM_MAX_BYTES, registerEnrichPages } from "./pages/enrich.tsx";
import { registerSignInPages } from "./pages/sign-in.tsx";

/** Pages that call no API with the cookie: opened from an email or another site as they are. */
const PAGES_WITHOUT_SESSION = new Set(["/console/sign-in", "/console/invite"]);

/** A list form carries the file (at most the jobs API's 10 MiB) and a few fields. */
const LIST_FORM_MAX_BYTES = JOB_LIMITS.maxBodyBytes + 64 * 1024;
const LIST_TOO_LARGE = `${JOB_INPUT_ERRORS.bodyTooLarge}: split the list`;
const FORM_MAX_BYTES = 64 * 1024;
/** The feedback form carries up to 1,000 reports, each with an SMTP reply: the API's own bound (POST /v1/email_feedback, 2 MiB). */
const FEEDBACK_FORM_MAX_BYTES = 2 * 1024 * 1024;

export const CONSOLE_CSP = {
  defaultSrc: ["'none'"],
  scriptSrc: [NONCE, "'strict-dynamic'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'", "data:"],
  connectSrc: ["'self'"],
  workerSrc: ["'self'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
  baseUri: ["'none'"],
};

export function registerConsole(app: Hono<AppEnv>): void {
  app.get("/", (c) => c.redirect("/console", 302));
  // The settings, parsed once per isolate, for what the console reads itself (its session notes).
  app.use("/console/*", async (c, next) => {
    c.set("config", loadConfig(c.env));
    await next();
  });
  app.use(
    "/console/*",
    secureHeaders({ contentSecurityPolicy: CONSOLE_CSP, xFrameOptions: "DENY", crossOriginEmbedderPolicy: false }),
    // A form posted from another site is refused before any handler runs (the API checks again).
    csrf(),
    // Bodies bounded before a handler reads them: a list file as the jobs API bounds it, any other form small.
    async (c, next) => {
      if (c.req.method !== "POST") return next();
      const list = c.req.path === "/console/lists";
      if (c.req.path === "/console/lists/enrich") return limitRequestBody(ENRICH_FORM_MAX_BYTES, `${LOOKUP_JOB_MESSAGES.bodyTooLarge}: split the list`)(c, next);
      if (c.req.path === "/console/feedback") return limitRequestBody(FEEDBACK_FORM_MAX_BYTES)(c, next);
      return limitRequestBody(list ? LIST_FORM_MAX_BYTES : FORM_MAX_BYTES, list ? LIST_TOO_LARGE : undefined)(c, next);
    },
    async (c, next) => {
      await next();
      c.header("Cache-Control", "no-store");
    },
    // A page another site made the browser open (a link, an <img>, a frame: Sec-Fetch-Site same-site or cross-site) would
    // call the API with the member's cookie, which the API refuses for such requests (edge/identity/sessions.ts). Nothing is
    // called: one link to the same page, which a click on this origin then opens as the member's own request.
    async (c, next) => {
      const site = c.req.header("sec-fetch-site");
      if (c.req.method !== "GET" || (site !== "same-site" && site !== "cross-site") || PAGES_WITHOUT_SESSION.has(c.req.path) || c.req.path.startsWith("/console/assets/")) {
        return next();
      }
      const url = new URL(c.req.url);
      c.status(200);
      return page(
        c,
        { title: "Continue to the console" },
        <p>
          You followed a link from another site. Nothing was done. <a href={url.pathname + url.search}>Continue to this page of the console</a>.
        </p>,
      );
    },
  );
  app.use("/console", secureHeaders({ contentSecurityPolicy: CONSOLE_CSP, xFrameOptions: "DENY" }), async (c, next) => {
    await next();
    c.header("Cache-Control", "no-store");
  });
  registerSignInPages(app);
  registerListPages(app);
  registerEnrichPages(app);
  registerKeyPages(app);
  registerAccountPages(app);
  registerCheckPages(app);
  registerFindPages(app);
  registerFeedbackPages(app);
  registerMemberPages(app);
}
