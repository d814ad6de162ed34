import { header, HeaderBag, unauthorized, WebhookSourceAdapter } from './source';

/**
 * Git forges (GitHub, Gitea, Forgejo): `sha256=<hex HMAC(body)>`, event and delivery in
 * headers; checked by Octokit's own verifier, which GitHub's clients use.
 */
export const forgeSource: WebhookSourceAdapter<'forge'> = {
  name: 'forge',
  secretSetting: 'FORGE_WEBHOOK_SECRET',
  detect: (headers) => Boolean(forgeEvent(headers)),
  async verify(headers, rawBody, secret) {
    const given = header(headers, 'x-forge-signature-256') ?? header(headers, 'x-hub-signature-256');
    if (!given) throw unauthorized(true, 'Forge signature missing: X-Forge-Signature-256 or X-Hub-Signature-256 is required.');
    if (!(await signatureMatches(secret, rawBody, given))) throw unauthorized(false, 'Forge signature does not match the body.');
  },
  event: (headers) => forgeEvent(headers),
  deliveryId: (headers) => header(headers, 'x-forge-delivery') ?? header(headers, 'x-github-delivery') ?? null,
};

/**
 * The package is ESM with an `import`-only export map, which `require` (the CommonJS
 * build) cannot resolve, so it is loaded once with a dynamic import.
 */
let octokit: Promise<typeof import('@octokit/webhooks-methods')> | undefined;

/** Octokit signs the body as text (UTF-8, as a forge sends it) and refuses an empty one outright. */
async function signatureMatches(secret: string, rawBody: Buffer, given: string): Promise<boolean> {
  if (rawBody.length === 0) return false;
  octokit ??= import('@octokit/webhooks-methods');
  return (await octokit).verify(secret, rawBody.toString('utf8'), given);
}

function forgeEvent(headers: HeaderBag): string | undefined {
  return header(headers, 'x-forge-event') ?? header(headers, 'x-github-event');
}
