/**
 * Who an id is, in words (docs/api.md "GET /v1/usage", "GET /v1/audit-events"): the name of the key, member or passkey
 * an id names, as an SQL expression the usage and audit reads select beside the id, so people are named by the API in
 * the same round trip and no page joins lists by hand. A member or passkey since removed is named by their own audit
 * events (member.joined and member.removed, passkey.added and passkey.removed carry the name), which are kept a year.
 */
import { sql, type SQL } from "drizzle-orm";

/** The name of the key, member or passkey `id` names in `accountId`; null for anything else (a session, an invite, "operator") or a key without a name. */
export function nameOf(accountId: string, id: SQL): SQL {
  return sql`coalesce(
    (select nullif(k.name, '') from api_keys k where k.id = ${id} and k.account_id = ${accountId}),
    (select m.name from members m where m.id = ${id} and m.account_id = ${accountId}),
    (select nullif(p.name, '') from passkeys p where p.id = ${id} and p.account_id = ${accountId}),
    (select nullif(json_extract(e.details, '$.name'), '') from audit_events e indexed by audit_events_target_idx
      where e.account_id = ${accountId} and e.target = ${id} and e.action in ('member.joined', 'member.removed', 'passkey.added', 'passkey.removed')
      order by e.id desc limit 1))`;
}
