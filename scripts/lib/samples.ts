/** A few sample profiles for `npm start`, so the printed curl line answers with real data. */
import type { NodeDatabase } from "./database.ts";
import { people, personEmails, personPhones } from "../../edge/db/schema.ts";

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
    for (const email of s.emails) await db.insert(personEmails).values({ personId: row.id, email, source: "sample" });
    for (const phone of s.phones) await db.insert(personPhones).values({ personId: row.id, phone, source: "sample" });
  }
}
