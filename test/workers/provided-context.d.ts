/** What test/workers/global-setup.ts (Node) hands the tests running inside workerd through `inject()`. */
declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string;
    /** The token of databaseUrl's server (made per run); countedDatabaseUrl's server takes the same one. */
    databaseAuthToken: string;
    /** test/fixtures/database-proxy.ts in front of databaseUrl; tests switch its mode. */
    faultyDatabaseUrl: string;
    /** Another libSQL server on databaseUrl's file (same token), for counting round trips at GET /stats. */
    countedDatabaseUrl: string;
    /** An address where nothing listens. */
    refusedDatabaseUrl: string;
    dohUrl: string;
    probeUrl: string;
    probeFixtureUrl: string;
    probeSecret: string;
    /** The Worker served over HTTP as `wrangler dev` serves it. */
    workerHttpUrl: string;
    /** test/fixtures/webhook-receiver.ts: receives job callbacks, records them, fails on request. */
    webhookUrl: string;
    /** What the fixture mail servers (test/fixtures/test-mail.ts) saw: GET ?host=127.0.0.x gives connections and rcptTo. */
    mailStatsUrl: string;
  }
}
export {};
