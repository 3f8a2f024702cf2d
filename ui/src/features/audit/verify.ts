/** The query key of the chain verification, which only runs when asked (see App's live data). */
export const VERIFY_KEY = "audit-verify";
