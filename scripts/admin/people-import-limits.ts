/**
 * The people import's bounds, apart from the import itself so the CLI can show and check them
 * without loading the validation libraries for every command.
 */
export const DEFAULT_BATCH_SIZE = 500;
export const MAX_BATCH_SIZE = 50_000;
export const DEFAULT_MAX_LINE_BYTES = 64 * 1024;
/** The summary lists this many rejections and counts the rest, so it stays printable. */
export const MAX_LISTED_REJECTIONS = 1000;
