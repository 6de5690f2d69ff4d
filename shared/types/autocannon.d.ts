// The parts of autocannon's API the benchmarks use (the package ships no types).
declare module "autocannon" {
  type Histogram = { average: number; mean: number; p50: number; p90: number; p99: number; max: number; min: number; total: number };
  export type Result = {
    requests: Histogram & { sent: number };
    latency: Histogram;
    throughput: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    statusCodeStats: Record<string, { count: number }>;
    duration: number;
  };
  /** One request of the sequence each connection sends; setupRequest may change it before it goes out. */
  export type RequestSpec = {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    setupRequest?: (request: RequestSpec & { headers: Record<string, string> }) => RequestSpec;
  };
  export type Options = {
    url: string;
    requests?: RequestSpec[];
    connections?: number;
    duration?: number;
    amount?: number;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
  };
  function autocannon(options: Options): Promise<Result>;
  /** With a callback: an instance that stop() ends early, the result then going to the callback. */
  function autocannon(options: Options, done: (error: Error | null, result: Result) => void): { stop(): void };
  export default autocannon;
}
