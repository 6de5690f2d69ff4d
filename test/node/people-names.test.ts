/**
 * How names, employers and domains are compared (shared/people/names.ts; docs/api.md "Looking up by name"), how a
 * lookup's inputs are checked and keyed (shared/identifiers.ts checkIdentifiers), and which columns of a CRM's header
 * a lookup job reads (guessIdentifierColumns). Pure functions, table-driven.
 */
import { describe, expect, it } from "vitest";
import { employerKey, foldName, fullNameKey, nameKey, normaliseDomain, splitFullName } from "../../shared/people/names.ts";
import { checkIdentifiers, guessIdentifierColumns, IDENTIFIER_REQUIRED } from "../../shared/identifiers.ts";
import { canonicalAddress } from "../../shared/email/canonical-address.ts";

describe("foldName", () => {
  it.each([
    ["José Núñez-Ortiz", "jose nunez ortiz"],
    ["STRAßE Øre Łódź", "strasse ore lodz"],
    ["O'Brien", "obrien"],
    ["  Ada   KING ", "ada king"],
    ["Дмитрий Шостакович", "дмитрий шостакович"],
    ["ﬁnn", "finn"],
    ["Йосиф Иосиф", "йосиф иосиф"],
    ["Ἀθηνᾶ", "ἀθηνᾶ"],
  ])("%s folds to %s", (input, folded) => expect(foldName(input)).toBe(folded));
});

describe("splitFullName and nameKey", () => {
  it.each([
    ["Ludwig van Beethoven", { given: "Ludwig", family: "van Beethoven" }, "ludwig beethoven"],
    ["Ludwig Maria van der Beethoven", { given: "Ludwig", middle: "Maria", family: "van der Beethoven" }, "ludwig beethoven"],
    ["Beethoven, Ludwig Maria", { given: "Ludwig", middle: "Maria", family: "Beethoven" }, "ludwig beethoven"],
    ["Gabriel García Márquez", { given: "Gabriel", middle: "García", family: "Márquez" }, "gabriel marquez"],
    ["Jean-Pierre Dupont", { given: "Jean-Pierre", family: "Dupont" }, "jeanpierre dupont"],
    ["Cher", { given: "Cher" }, null],
    ["J. Smith", { given: "J.", family: "Smith" }, null],
  ])("%s", (full, parts, key) => {
    expect(splitFullName(full)).toEqual(parts);
    expect(fullNameKey(full)).toBe(key);
  });

  it("a given and family name key as the full name does; a family name's particles do not count", () => {
    expect(nameKey({ given: "ludwig", family: "Van Beethoven" })).toBe(fullNameKey("Ludwig van Beethoven"));
    expect(nameKey({ given: "Gabriel", family: "García Márquez" })).toBe("gabriel marquez");
    expect(nameKey({ given: "Ada" })).toBeNull();
    expect(nameKey({ family: "Lovelace" })).toBeNull();
    expect(nameKey({ given: "Jean-Pierre", family: "Dupont" })).not.toBe(nameKey({ given: "Jean", family: "Dupont" }));
  });
});

describe("employerKey and normaliseDomain", () => {
  it.each([
    ["Acme, Inc.", "acme"],
    ["ACME Corp", "acme"],
    ["Bonn Orchestra GmbH", "bonn orchestra"],
    ["Company", "company"],
    ["...", null],
  ])("employer %s keys as %s", (name, key) => expect(employerKey(name)).toBe(key));

  it.each([
    ["https://www.Acme.com/about?x=1", "acme.com"],
    ["acme.com.", "acme.com"],
    ["bücher.de", "xn--bcher-kva.de"],
    ["sub.acme.co.uk:443", "sub.acme.co.uk"],
    ["localhost", null],
    ["10.0.0.1", null],
    ["ada@acme.com", null],
    ["acme_corp.com", null],
    ["", null],
  ])("domain %s is %s", (input, domain) => expect(normaliseDomain(input)).toBe(domain));
});

describe("checkIdentifiers with the new inputs", () => {
  it("keys an email as the base keys addresses, a phone in E.164, a name with its company or domain", () => {
    const email = checkIdentifiers({ email: " Ada.Lovelace+crm@GoogleMail.com " });
    expect(email).toEqual({ ok: true, ids: { keys: { email: canonicalAddress("ada.lovelace@gmail.com") } } });
    expect(checkIdentifiers({ phone: "020 7946 0123", country: "GB" })).toMatchObject({ ok: true, ids: { keys: { phone: "+442079460123" } } });
    expect(checkIdentifiers({ full_name: "Ludwig van Beethoven", company_domain: "www.bonn.example" })).toMatchObject({ ok: true, ids: { keys: { name: "ludwig beethoven", domain: "bonn.example" } } });
    expect(checkIdentifiers({ first_name: "Ludwig", last_name: "van Beethoven", company: "Bonn Orchestra GmbH" })).toMatchObject({ ok: true, ids: { keys: { name: "ludwig beethoven", company: "bonn orchestra" } } });
    expect(checkIdentifiers({ profnet_id: "7", email: "a@b.example" })).toMatchObject({ ok: true, ids: { profnetId: 7, keys: { email: "a@b.example" } } });
  });

  it("refuses what cannot find anyone, each with its own message", () => {
    const error = (values: Record<string, string>) => {
      const r = checkIdentifiers(values);
      return r.ok ? null : r.error;
    };
    expect(error({})).toBe(IDENTIFIER_REQUIRED);
    expect(error({ email: "ada" })).toMatch(/^email must/);
    expect(error({ phone: "020 7946 0123" })).toMatch(/^phone must/);
    expect(error({ full_name: "Ada Lovelace" })).toMatch(/company_domain|company/);
    expect(error({ company: "Acme" })).toMatch(/full_name|first_name/);
    expect(error({ full_name: "A. Lovelace", company_domain: "acme.example" })).not.toBeNull();
    expect(error({ full_name: "Ada Lovelace", company_domain: "localhost" })).toMatch(/company_domain/);
    expect(error({ full_name: "Ada\u202eLovelace", company_domain: "acme.example" })).not.toBeNull();
  });
});

describe("guessIdentifierColumns", () => {
  const guess = (header: string[]) => Object.fromEntries(Object.entries(guessIdentifierColumns(header)).map(([k, i]) => [k, header[i]]));
  it.each<[string[], Record<string, string>]>([
    [["Profnet ID", "codehost_login", "Name"], { profnet_id: "Profnet ID", codehost_login: "codehost_login" }],
    [["Name", "Email"], { email: "Email" }],
    [["Name", "Company"], { full_name: "Name", company: "Company" }],
    [["First Name", "Last Name", "Full Name", "Website"], { first_name: "First Name", last_name: "Last Name", company_domain: "Website" }],
    // A first name alone finds nobody: only the company is read, and the job answers "no identifier column".
    [["First Name", "Company Name"], { company: "Company Name" }],
    [["Mobile", "Country"], { phone: "Mobile", country: "Country" }],
    [["Email Address", "Country"], { email: "Email Address" }],
    [["email", "e-mail", "Work Email"], { email: "email" }],
  ])("%j", (header, expected) => expect(guess(header)).toEqual(expected));

  // Files for the finder's kind of input (issue 47): a name beside a company or its website, each line well-formed as
  // the enrich preview (edge/console/browser/enrich-worker.ts) and the lookup job count it.
  it.each<[string, Record<string, string>]>([
    ["Full name,Company\nGrace Hopper,US Navy", { full_name: "Full name", company: "Company" }],
    ["First name,Last name,Website\nGrace,Hopper,https://www.navy.example/", { first_name: "First name", last_name: "Last name", company_domain: "Website" }],
    ["first_name,last_name,company_domain\nGrace,Hopper,navy.example", { first_name: "first_name", last_name: "last_name", company_domain: "company_domain" }],
  ])("a file of names and companies: %j", (file, expected) => {
    const [header, row] = file.split("\n").map((l) => l.split(","));
    expect(guess(header!)).toEqual(expected);
    const values = Object.fromEntries(Object.entries(guessIdentifierColumns(header!)).map(([k, i]) => [k, row![i]]));
    expect(checkIdentifiers(values).ok).toBe(true);
  });
});
