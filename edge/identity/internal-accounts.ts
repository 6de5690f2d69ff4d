/**
 * Accounts the service runs for itself. Their jobs' results hold every stored address (the refresh job re-verifies
 * them all), so nobody may hold a key to one or be given credits on one: the admin CLI refuses both for every id
 * listed here. A new internal account is added to this list, or it is not internal.
 */

/** The internal account whose jobs re-verify stored addresses: one tenant among the customers in the fair share. */
export const REFRESH_ACCOUNT_ID = "acc_stored_email_refresh";

export const INTERNAL_ACCOUNT_IDS: readonly string[] = [REFRESH_ACCOUNT_ID];

export const isInternalAccount = (accountId: string) => INTERNAL_ACCOUNT_IDS.includes(accountId);
