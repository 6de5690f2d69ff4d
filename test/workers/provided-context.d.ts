/** What test/workers/global-setup.ts (Node) hands the tests running inside workerd through `inject()`. */
declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string;
    dohUrl: string;
    probeUrl: string;
    probeFixtureUrl: string;
    probeSecret: string;
    /** The Worker served over HTTP as `wrangler dev` serves it. */
    workerHttpUrl: string;
  }
}
export {};
