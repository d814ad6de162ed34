/** What a tour step checks on each answer: the status it expects (the body is checked against the document elsewhere). */
export function expectStatus(result: { response: Response }, status: number): void {
  if (result.response.status !== status) {
    throw new Error(`${result.response.url}: expected ${status}, answered ${result.response.status}`);
  }
}

export const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
export const form = (body: object) => new URLSearchParams(body as Record<string, string>).toString();
export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
