import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "turso",
  schema: "./edge/db/schema.ts",
  out: "./edge/db/migrations",
  dbCredentials: {
    url: process.env.DATABASE_URL ?? "file:.data/dev.db",
    authToken: process.env.DATABASE_AUTH_TOKEN,
  },
});
