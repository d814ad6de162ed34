import { decodeCursor, encodeCursor, KeysetPage, KeysetRequest, PageCursor } from '../database/keyset-page';

/** A page of a list, as the controller's list endpoints answer: `{count, next, previous, results}`. */
export interface Page<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

/** A page of a list paged by key: `count_estimated` says whether `count` is an estimate. */
export interface CursorPage<T> extends Page<T> {
  count_estimated: boolean;
}

/** Where a list lives and the filters its links keep. */
export interface PageLink {
  baseUrl: string;
  path: string;
  query?: Record<string, string | number | undefined>;
}

export interface PageRequest {
  limit: number;
  offset: number;
}

export const DEFAULT_PAGE_LIMIT = 50;

export function pageRequest(query: { limit?: number; offset?: number }): PageRequest {
  return { limit: query.limit ?? DEFAULT_PAGE_LIMIT, offset: query.offset ?? 0 };
}

/** `?limit=&offset=&cursor=&count=` as the keyset lists take it (the cursor was validated with the query). */
export function keysetRequest(query: { limit?: number; offset?: number; cursor?: string; count?: 'exact' }): KeysetRequest {
  const cursor = query.cursor ? decodeCursor(query.cursor) ?? undefined : undefined;
  return { limit: query.limit ?? DEFAULT_PAGE_LIMIT, offset: query.offset ?? 0, cursor, exactCount: query.count === 'exact' };
}

/**
 * The answer for a keyset page: `next` and `previous` are absolute links carrying the
 * cursor, the filters, the limit and `count=exact` when it was asked for.
 */
export function toCursorPage<T, R>(page: KeysetPage<R>, results: T[], request: KeysetRequest, link: PageLink): CursorPage<T> {
  const url = (cursor: PageCursor): string => {
    const params = linkParams(link);
    params.set('limit', String(request.limit));
    if (request.exactCount) params.set('count', 'exact');
    params.set('cursor', encodeCursor(cursor));
    return `${link.baseUrl}${link.path}?${params.toString()}`;
  };
  return {
    count: page.count,
    count_estimated: page.countEstimated,
    next: page.next ? url(page.next) : null,
    previous: page.previous ? url(page.previous) : null,
    results,
  };
}

function linkParams(link: PageLink): URLSearchParams {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(link.query ?? {})) {
    if (value !== undefined && !['limit', 'offset', 'cursor', 'count'].includes(name)) params.set(name, String(value));
  }
  return params;
}

/**
 * Builds the page with absolute `next`/`previous` links that keep the other query
 * parameters (filters) as they were.
 */
export function toPage<T>(
  results: T[],
  count: number,
  page: PageRequest,
  link: PageLink,
): Page<T> {
  const url = (offset: number): string => {
    const params = linkParams(link);
    params.set('limit', String(page.limit));
    if (offset > 0) params.set('offset', String(offset));
    return `${link.baseUrl}${link.path}?${params.toString()}`;
  };
  return {
    count,
    next: page.offset + page.limit < count ? url(page.offset + page.limit) : null,
    previous: page.offset > 0 ? url(Math.max(0, page.offset - page.limit)) : null,
    results,
  };
}
