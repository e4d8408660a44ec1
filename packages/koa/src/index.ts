/**
 * @floodgate/koa — the adapter arrives with its own issue; the package builds so the
 * workspace layout is complete.
 */
export const ADAPTER = 'koa' as const;
