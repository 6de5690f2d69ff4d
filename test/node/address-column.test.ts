/**
 * The rule both the jobs API and the console's preview use to find a file's address column (shared/address-column.ts),
 * whether an upload is text at all (shared/file-kind.ts), and how a line's kept cells are stored and read back
 * (edge/jobs/kept-columns.ts): tables of cases, and properties.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { chooseAddressColumn, isAddressHeader, noAddressColumn, UnknownColumnError } from "../../shared/address-column.ts";
import { notTextMessage, sniffFileKind } from "../../shared/file-kind.ts";
import { decodeRecord, keptColumnNames } from "../../edge/jobs/kept-columns.ts";
import { csvHeader, ownColumnNames } from "../../edge/jobs/csv-export.ts";

const rows = (text: string) => text.split("\n").map((line) => line.split(","));

describe("a header named like an address", () => {
  it.each([
    "email",
    "Email",
    "E-mail",
    "e_mail",
    "EMAIL_ADDRESS",
    "E-mail address",
    "Email Address",
    "emailaddress",
    "Mail",
    "Work email",
    "Personal E-Mail",
    "Email (work)",
    "email 2",
    "Email1",
    "Email ID",
    "Courriel",
    "Adresse e-mail",
    "Correo electrónico",
    "E-Mail-Adresse",
    "E-post",
  ])("%s", (header) => expect(isAddressHeader(header)).toBe(true));

  it.each(["Name", "Phone", "Email opt-out", "Email domain", "Email status", "Mailing address", "Address", "Company", "emailing list", ""])("not %s", (header) =>
    expect(isAddressHeader(header)).toBe(false),
  );
});

describe("the address column", () => {
  it.each([
    ["a CRM export, the address column neither first nor named email", "Name,E-mail address,Company\nAda,ada@x.io,Acme", 1, true, "header"],
    ["the first of two named columns", "Work email,Personal email\na@x.io,b@y.io", 0, true, "header"],
    ["no such header: the column of address-looking cells", "Name,Contact,Notes\nAda,ada@x.io,hi\nBob,bob@y.io,\nCy,,x", 1, true, "cells"],
    ["no header at all: a plain list keeps its first line", "ada@x.io\nbob@y.io", 0, false, "cells"],
    ["no header, address second", "Ada,ada@x.io\nBob,bob@y.io", 1, false, "cells"],
    ["a few mistyped addresses do not hide the column", "who,where\nAda,ada@x.io\nBob,bob@@y.io\nCy,cy@z.io\nDee,dee@w.io", 1, true, "cells"],
  ] as const)("%s", (_name, text, column, hasHeader, by) => {
    const [first, ...sample] = rows(text);
    expect(chooseAddressColumn(first!, sample)).toEqual({ column, hasHeader, by });
  });

  it("finds none in a file of names and phones, and says which columns it has", () => {
    const [first, ...sample] = rows("Name,Phone\nAda,+44 20 7946 0000\nBob,555-0100");
    const choice = chooseAddressColumn(first!, sample);
    expect(choice).toEqual({ column: null, hasHeader: true, by: "none" });
    expect(noAddressColumn(first!, choice.hasHeader)).toBe("No column of the file looks like email addresses (columns: “Name”, “Phone”)");
  });

  it("does not take a column where only one cell in many holds an @", () => {
    const [first, ...sample] = rows("Name,Notes\nAda,call me @ office\nBob,ok\nCy,x@y.io is old\nDee,n/a");
    expect(chooseAddressColumn(first!, sample).column).toBeNull();
  });

  it("reads a semicolon-separated file as one column, refuses it, and says why", () => {
    const [first, ...sample] = ["Nom;E-mail;Société", "Ada;ada@x.io;Acme"].map((line) => [line]);
    const choice = chooseAddressColumn(first!, sample);
    expect(choice.column).toBeNull();
    expect(noAddressColumn(first!, choice.hasHeader)).toMatch(/separate columns with semicolons or tabs; save it as comma-separated CSV$/);
  });

  it("takes email_column by name (exactly, else ignoring case) or by 1-based number, and refuses one that is not a column", () => {
    const [first, ...sample] = rows("Name,Contact,contact\nAda,ada@x.io,x");
    expect(chooseAddressColumn(first!, sample, "contact")).toEqual({ column: 2, hasHeader: true, by: "parameter" });
    expect(chooseAddressColumn(first!, sample, "CONTACT")).toEqual({ column: 1, hasHeader: true, by: "parameter" });
    expect(chooseAddressColumn(first!, sample, "2")).toEqual({ column: 1, hasHeader: true, by: "parameter" });
    // By number, the first row is data when its cell there looks like an address.
    expect(chooseAddressColumn(["ada@x.io", "Ada"], [], "1")).toEqual({ column: 0, hasHeader: false, by: "parameter" });
    expect(() => chooseAddressColumn(first!, sample, "Phone")).toThrow(new UnknownColumnError('email_column "Phone" is not a column of the file (columns: “Name”, “Contact”, “contact”)'));
    expect(() => chooseAddressColumn(first!, sample, "4")).toThrow(new UnknownColumnError("email_column 4: the file has 3 columns"));
    expect(() => chooseAddressColumn(first!, sample, "0")).toThrow(UnknownColumnError);
  });

  it("never echoes control characters from a file's header in its message", () => {
    const message = noAddressColumn(["Na\u0000me", "Ph\u202Eone", "x".repeat(100)], true);
    expect(message).not.toMatch(/[\p{Cc}\u202E]/u);
    expect(message).toContain("…");
  });
});

describe("whether an upload is text", () => {
  const bytes = (...b: number[]) => new Uint8Array(b);
  it.each([
    ["a PNG", bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13), "a PNG image"],
    ["an xlsx", bytes(0x50, 0x4b, 0x03, 0x04, 20, 0), "an Excel workbook (.xlsx) or another ZIP archive"],
    ["an xls", bytes(0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1), "an Excel 97-2003 workbook (.xls) or another Office file"],
    ["a PDF", new TextEncoder().encode("%PDF-1.7\n"), "a PDF document"],
    ["UTF-16", bytes(0xff, 0xfe, 0x65, 0, 0x6d, 0), "UTF-16 text"],
    ["NUL bytes", new TextEncoder().encode("email\nada\u0000@x.io\n"), "a binary file"],
  ])("%s is not", (_name, head, what) => expect(sniffFileKind(head)).toEqual({ text: false, what }));

  it.each([
    ["UTF-8 with a BOM", new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode("email\r\nada@x.io\r\n")])],
    ["Windows-1252 (Müller as one byte)", new Uint8Array([0x4d, 0xfc, 0x6c, 0x6c, 0x65, 0x72, 0x2c, 0x61, 0x40, 0x62, 0x2e, 0x63, 0x6f, 0x0a])],
    ["tabs and form feeds", new TextEncoder().encode("a\tb\fc\n")],
    ["empty", new Uint8Array(0)],
  ])("%s is text", (_name, head) => expect(sniffFileKind(head)).toEqual({ text: true }));

  it("says what a file looks like, never its bytes", () => {
    expect(notTextMessage("a PNG image")).toBe("The file is not a CSV file: it looks like a PNG image. Save the list as CSV (comma-separated values) and send that");
  });
});

describe("a line's kept cells", () => {
  it.each([
    ["Ada,ada@x.io,Acme", ["Ada", "ada@x.io", "Acme"]],
    ['"Lovelace, Ada","said ""hi""","two\r\nlines"', ["Lovelace, Ada", 'said "hi"', "two\r\nlines"]],
    ['"Ada",ada@x.io', ["Ada", "ada@x.io"]],
    ['""', [""]],
    [",", ["", ""]],
    ["a,", ["a", ""]],
    [' spaced ,=1+1,""', [" spaced ", "=1+1", ""]],
  ])("%j reads as %j", (stored, cells) => expect(decodeRecord(stored)).toEqual(cells));

  it("reads back any cells a CSV writer put in a line, quoted or not", () => {
    const cell = fc.string({ unit: fc.constantFrom("a", ",", '"', "\n", "\r", " ", "é") });
    fc.assert(
      fc.property(fc.array(fc.tuple(cell, fc.boolean()), { minLength: 2, maxLength: 6 }), (cells) => {
        // Quoted where RFC 4180 must, and wherever the writer chose to.
        const line = cells.map(([c, quote]) => (quote || /[",\r\n]/.test(c) ? `"${c.replace(/"/g, '""')}"` : c)).join(",");
        expect(decodeRecord(line)).toEqual(cells.map(([c]) => c));
      }),
    );
  });

  it("names columns by the header, trimmed; a blank or missing name is column_<n>, a repeat gets (2)", () => {
    expect(keptColumnNames([" Name ", "", "Email", "Email"], 5)).toEqual(["Name", "column_2", "Email", "Email (2)", "column_5"]);
    expect(keptColumnNames(null, 2)).toEqual(["column_1", "column_2"]);
  });

  it("puts our columns after the customer's, renaming ours where a name is taken", () => {
    expect(ownColumnNames(["Name", "Email", "Score"]).slice(0, 4)).toEqual(["verification_email", "classification", "valid", "verification_score"]);
    expect(csvHeader(["Name", "=cmd"])).toMatch(/^Name,'=cmd,email,classification,/);
  });
});
