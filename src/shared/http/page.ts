/** A page of a list, as the controller's list endpoints answer: `{count, next, previous, results}`. */
export interface Page<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

export interface PageRequest {
  limit: number;
  offset: number;
}

export const DEFAULT_PAGE_LIMIT = 50;

export function pageRequest(query: { limit?: number; offset?: number }): PageRequest {
  return { limit: query.limit ?? DEFAULT_PAGE_LIMIT, offset: query.offset ?? 0 };
}

/**
 * Builds the page with absolute `next`/`previous` links that keep the other query
 * parameters (filters) as they were.
 */
export function toPage<T>(
  results: T[],
  count: number,
  page: PageRequest,
  link: { baseUrl: string; path: string; query?: Record<string, string | number | undefined> },
): Page<T> {
  const url = (offset: number): string => {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(link.query ?? {})) {
      if (value !== undefined && name !== 'limit' && name !== 'offset') params.set(name, String(value));
    }
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
