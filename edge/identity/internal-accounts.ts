/**
 * Accounts the service runs for itself. Their jobs' results hold every stored address (the refresh job re-verifies
 * them all), or their audit trail the operators' decisions about people, so nobody may hold a key to one or be given
 * credits on one: the admin CLI refuses both for every id
 * listed here. A new internal account is added to this list, or it is not internal.
 */

/** The internal account whose jobs re-verify stored addresses: one tenant among the customers in the fair share. */
export const REFRESH_ACCOUNT_ID = "acc_stored_email_refresh";

/**
 * The operators' own audit trail of what they do to the people data (merges applied, undone, dismissed: scripts/admin/
 * people-merge.ts): audit events under an account nobody holds a key to, read with the admin CLI.
 */
export const PEOPLE_AUDIT_ACCOUNT_ID = "acc_people_data_operators";

export const INTERNAL_ACCOUNT_IDS: readonly string[] = [REFRESH_ACCOUNT_ID, PEOPLE_AUDIT_ACCOUNT_ID];

export const isInternalAccount = (accountId: string) => INTERNAL_ACCOUNT_IDS.includes(accountId);
