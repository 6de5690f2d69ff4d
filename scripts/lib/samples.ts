/** A few sample profiles for `npm start`, so the printed curl line answers with real data. */
import type { NodeDatabase } from "./database.ts";
import {
  people,
  personEmailSources,
  personEmails,
  personEmployment,
  personEmploymentDomains,
  personEmploymentSources,
  personNameSources,
  personNames,
  personPhoneSources,
  personPhones,
} from "../../edge/db/schema.ts";
import { canonicalAddress } from "../../shared/email/canonical-address.ts";
import { employerKey, foldName, nameKey } from "../../shared/people/names.ts";

type Job = { employer: string; domain: string; title: string; start: string; end?: string; current: boolean };

const samples = [
  {
    person: { profnetId: 1001, profnetPublicIdentifier: "ada-lovelace", codehostId: 2001, codehostLogin: "ada", codehostUsername: "Ada Lovelace", socialnetUsername: "ada.lovelace", microblogUsername: "ada_l" },
    emails: ["ada.lovelace@gmail.com", "ada@analytical-engine.example"],
    phones: ["+442071838750"],
    name: { full: "Ada King Lovelace", given: "Ada", middle: "King", family: "Lovelace" },
    employment: [{ employer: "Analytical Engine Ltd", domain: "analytical-engine.example", title: "Analyst", start: "1842", current: true }] as Job[],
  },
  {
    person: { profnetId: 1002, profnetPublicIdentifier: "grace-hopper", codehostId: 2002, codehostLogin: "ghopper", codehostUsername: "Grace Hopper", socialnetUsername: null, microblogUsername: "amazing_grace" },
    emails: ["grace@navy.example", "grace.hopper@outlook.com"],
    phones: ["+12025550143", "+12025550199"],
    name: { full: "Grace Brewster Hopper", given: "Grace", middle: "Brewster", family: "Hopper" },
    employment: [
      { employer: "US Navy", domain: "navy.example", title: "Rear Admiral", start: "1943", current: true },
      { employer: "Vassar College", domain: "vassar.example", title: "Professor of Mathematics", start: "1931", end: "1943", current: false },
    ] as Job[],
  },
  {
    person: { profnetId: 1003, profnetPublicIdentifier: "alan-turing", codehostId: null, codehostLogin: null, codehostUsername: null, socialnetUsername: null, microblogUsername: null },
    emails: [],
    phones: [],
    name: { full: "Alan Mathison Turing", given: "Alan", middle: "Mathison", family: "Turing" },
    employment: [] as Job[],
  },
];

export async function seedSamplePeople(db: NodeDatabase): Promise<void> {
  for (const s of samples) {
    const [row] = await db.insert(people).values(s.person).onConflictDoNothing().returning({ id: people.id });
    if (!row) continue;
    const now = Date.now();
    for (const email of s.emails) {
      const [added] = await db.insert(personEmails).values({ personId: row.id, email, addressKey: canonicalAddress(email), firstSeenAt: now, lastSeenAt: now }).returning({ id: personEmails.id });
      await db.insert(personEmailSources).values({ emailId: added!.id, source: "sample", firstSeenAt: now, lastSeenAt: now });
    }
    for (const phone of s.phones) {
      const [added] = await db.insert(personPhones).values({ personId: row.id, phone, firstSeenAt: now, lastSeenAt: now }).returning({ id: personPhones.id });
      await db.insert(personPhoneSources).values({ phoneId: added!.id, source: "sample", firstSeenAt: now, lastSeenAt: now });
    }
    const [name] = await db
      .insert(personNames)
      .values({ personId: row.id, ...s.name, folded: foldName(s.name.full), nameKey: nameKey(s.name), firstSeenAt: now, lastSeenAt: now })
      .returning({ id: personNames.id });
    await db.insert(personNameSources).values({ nameId: name!.id, source: "sample", firstSeenAt: now, lastSeenAt: now });
    for (const job of s.employment) {
      const key = employerKey(job.employer)!;
      const [added] = await db
        .insert(personEmployment)
        .values({
          personId: row.id,
          employer: job.employer,
          employerKey: key,
          title: job.title,
          startDate: job.start,
          endDate: job.end ?? null,
          current: job.current ? 1 : 0,
          entryKey: `${key}\u0000${foldName(job.title)}\u0000${job.start}`,
          firstSeenAt: now,
          lastSeenAt: now,
        })
        .returning({ id: personEmployment.id });
      await db.insert(personEmploymentDomains).values({ employmentId: added!.id, personId: row.id, domain: job.domain });
      await db.insert(personEmploymentSources).values({ employmentId: added!.id, source: "sample", firstSeenAt: now, lastSeenAt: now });
    }
  }
}
