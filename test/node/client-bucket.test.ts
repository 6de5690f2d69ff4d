/** The bucket failed authentications are counted in (edge/identity/authenticate.ts clientBucket, docs/api.md "Rate limits"). */
import { describe, expect, it } from "vitest";
import { clientBucket } from "../../edge/identity/authenticate.ts";

describe("clientBucket", () => {
  it.each([
    ["an IPv4 address, as it is", "203.0.113.7", "203.0.113.7"],
    ["an IPv6 address, by its /64", "2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"],
    ["another address in the same /64, the same bucket", "2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"],
    ["the next /64, another bucket", "2001:db8:1:3::1", "2001:db8:1:3::/64"],
    ["a shorthand IPv6 form, canonical", "2001:DB8:0001:0002::9", "2001:db8:1:2::/64"],
    ["an IPv4-mapped IPv6 address, as its IPv4 address", "::ffff:203.0.113.7", "203.0.113.7"],
    ["anything else, as it is", "no-client-address", "no-client-address"],
  ])("%s", (_name, address, bucket) => {
    expect(clientBucket(address)).toBe(bucket);
  });
});
