/**
 * The people files the import benchmarks read: JSON Lines, nine new people in ten rows, the tenth
 * updating an earlier person through a differently cased login. `firstId` shifts every identifier,
 * so that several files can each be all new to one database.
 */
import { createWriteStream } from "node:fs";
import { once } from "node:events";

function generatedRow(index: number, firstId: number): object {
  const n = firstId + index;
  if (index % 10 === 9) {
    const earlier = n - 5;
    return { codehost_login: `CODER-${earlier}`, email_addresses: [`work.${earlier}@example.org`] };
  }
  return {
    profnet_id: 1_000_000 + n,
    profnet_public_identifier: `person-${n}`,
    codehost_id: 5_000_000 + n,
    codehost_login: `coder-${n}`,
    codehost_username: `Coder ${n}`,
    socialnet_username: `social_${n}`,
    email_addresses: [`person${n}@example.com`, `Person${n}@Example.com`, `p.${n}@gmail.com`],
    phone_numbers: [`+33 6 ${String(10_000_000 + n).slice(-8)}`],
  };
}

export async function writeGeneratedFile(path: string, rows: number, firstId = 0): Promise<void> {
  const out = createWriteStream(path);
  for (let index = 0; index < rows; index++) {
    if (!out.write(`${JSON.stringify(generatedRow(index, firstId))}\n`)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
}
