/**
 * A typed client for this API (README "A typed client"): openapi-fetch over the types
 * openapi-typescript generates from the OpenAPI document the Worker serves (client/openapi.json,
 * client/schema.d.ts; `npm run client:generate` writes both, and the tests fail when either differs
 * from what the Worker serves). Our own route tests call the API through it, so the document is
 * proven against the real Worker.
 *
 *   const api = createApiClient({ baseUrl: "http://127.0.0.1:8787", apiKey: process.env.API_KEY! });
 *   const { data, error } = await api.GET("/v1/email_verifications", { params: { query: { email_address: "ana@example.com" } } });
 */
import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./schema.d.ts";

export type { components, paths };
/** The API's schemas by name: `Schemas["VerificationJob"]`, `Schemas["JobResult"]`, … */
export type Schemas = components["schemas"];
export type ApiClient = Client<paths>;

export type ApiClientOptions = {
  /** Where the API is, e.g. https://api.example.com or http://127.0.0.1:8787 (no trailing /v1). */
  baseUrl: string;
  /** An API key; sent as `Authorization: Bearer <key>`. */
  apiKey: string;
  /** Another fetch (tests hand in the Worker's own). */
  fetch?: (request: Request) => Promise<Response>;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
};

export function createApiClient({ baseUrl, apiKey, fetch, headers = {} }: ApiClientOptions): ApiClient {
  return createClient<paths>({
    baseUrl: baseUrl.replace(/\/+$/, ""),
    headers: { ...headers, authorization: `Bearer ${apiKey}` },
    ...(fetch ? { fetch } : {}),
  });
}

type CreateJobParams = Pick<paths["/v1/email_verification_jobs"]["post"]["parameters"], "query" | "header">;

/**
 * POST /v1/email_verification_jobs with a CSV file, every column of which the job keeps (the addresses in
 * `email_column` when the query gives it, else the column the API finds: docs/jobs.md "CSV files"). openapi-fetch types a request body by its JSON schema and
 * serializes it as JSON, so a CSV goes through here: sent as it is, as text/csv.
 */
export function createJobFromCsv(api: ApiClient, csv: string, params: CreateJobParams = {}) {
  return api.POST("/v1/email_verification_jobs", {
    params,
    // The text, typed as the JSON body the generated types expect; the serializer sends it unchanged.
    body: csv as unknown as Schemas["JobCreateRequest"],
    bodySerializer: (body) => body as unknown as string,
    headers: { "content-type": "text/csv" },
  });
}

type CreateLookupJobParams = Pick<paths["/v1/lookup_jobs"]["post"]["parameters"], "query" | "header">;

/**
 * POST /v1/lookup_jobs with a list: a CSV file (a header row naming the identifier columns) or JSON Lines
 * (`format: "jsonl"`), sent as it is. With `query: { dry_run: "true" }` the answer is the quote (200) and nothing is
 * created; otherwise the job (202).
 */
export function createLookupJob(api: ApiClient, list: string, params: CreateLookupJobParams = {}, format: "csv" | "jsonl" = "csv") {
  return api.POST("/v1/lookup_jobs", {
    params,
    body: list as never,
    bodySerializer: (body) => body as unknown as string,
    headers: { "content-type": format === "csv" ? "text/csv" : "application/jsonl" },
  });
}
