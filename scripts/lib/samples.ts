/** A few sample profiles for `npm start`, so the printed curl line answers with real data. */
import type { NodeDatabase } from "./database.ts";
import { people, personEmailSources, personEmails, personPhoneSources, personPhones } from "../../edge/db/schema.ts";

const samples = [
  {
    person: { profnetId: 1001, profnetPublicIdentifier: "ada-lovelace", codehostId: 2001, codehostLogin: "ada", codehostUsername: "Ada Lovelace", socialnetUsername: "ada.lovelace", microblogUsername: "ada_l" },
    emails: ["ada.lovelace@gmail.com", "ada@analytical-engine.example"],
    phones: ["+442071838750"],
  },
  {
    person: { profnetId: 1002, profnetPublicIdentifier: "grace-hopper", codehostId: 2002, codehostLogin: "ghopper", codehostUsername: "Grace Hopper", socialnetUsername: null, microblogUsername: "amazing_grace" },
    emails: ["grace@navy.example", "grace.hopper@outlook.com"],
    phones: ["+12025550143", "+12025550199"],
  },
  {
    person: { profnetId: 1003, profnetPublicIdentifier: "alan-turing", codehostId: null, codehostLogin: null, codehostUsername: null, socialnetUsername: null, microblogUsername: null },
    emails: [],
    phones: [],
  },
];

export async function seedSamplePeople(db: NodeDatabase): Promise<void> {
  for (const s of samples) {
    const [row] = await db.insert(people).values(s.person).onConflictDoNothing().returning({ id: people.id });
    if (!row) continue;
    const now = Date.now();
    for (const email of s.emails) {
      const [added] = await db.insert(personEmails).values({ personId: row.id, email, firstSeenAt: now, lastSeenAt: now }).returning({ id: personEmails.id });
      await db.insert(personEmailSources).values({ emailId: added!.id, source: "sample", firstSeenAt: now, lastSeenAt: now });
    }
    for (const phone of s.phones) {
      const [added] = await db.insert(personPhones).values({ personId: row.id, phone, firstSeenAt: now, lastSeenAt: now }).returning({ id: personPhones.id });
      await db.insert(personPhoneSources).values({ phoneId: added!.id, source: "sample", firstSeenAt: now, lastSeenAt: now });
    }
  }
}
