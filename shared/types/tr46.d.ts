// tr46 7.x (UTS #46 processing, the jsdom/whatwg-url implementation) ships no types; these are the
// parts of its API the syntax check uses, as its README documents them.
declare module "tr46" {
  export type Tr46Options = {
    checkHyphens?: boolean;
    checkBidi?: boolean;
    checkJoiners?: boolean;
    useSTD3ASCIIRules?: boolean;
    verifyDNSLength?: boolean;
    transitionalProcessing?: boolean;
    ignoreInvalidPunycode?: boolean;
  };
  /** The domain in A-label form, or null when processing finds an error. */
  export function toASCII(domainName: string, options?: Tr46Options): string | null;
  export function toUnicode(domainName: string, options?: Omit<Tr46Options, "verifyDNSLength">): { domain: string; error: boolean };
}
