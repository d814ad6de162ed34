import { lookup as dnsLookup, LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import * as ipaddr from 'ipaddr.js';
import { SubscriptionSettings } from '../../shared/config/subscription-settings';

/**
 * Where a subscription may send: a public unicast address, or one inside
 * SUBSCRIPTION_ALLOWED_CIDRS. Loopback, private, link-local (169.254.169.254), CGNAT, ULA
 * and every other special range are refused.
 */
export class TargetPolicy {
  constructor(private readonly allowed: SubscriptionSettings['allowedCidrs']) {}

  /** Why `address` may not be reached, or null when it may. */
  refusal(address: string): string | null {
    let parsed: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      parsed = ipaddr.process(address);
    } catch {
      return `${address} is not an IP address`;
    }
    const range = parsed.range();
    if (range === 'unicast') return null;
    if (this.allowed.some(([block, bits]) => block.kind() === parsed.kind() && parsed.match(block, bits))) return null;
    return `${address} is a ${range} address (not in SUBSCRIPTION_ALLOWED_CIDRS)`;
  }

  /**
   * A `lookup` for `http.request`: resolves the name, drops every address the policy refuses
   * and hands the connection only what it checked, so a name that resolves differently a
   * moment later (DNS rebinding) cannot slip past. No address left: an error naming why.
   */
  readonly lookup = (
    hostname: string,
    options: { all?: boolean; family?: number } | number,
    callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    const family = typeof options === 'number' ? options : (options.family ?? 0);
    const all = typeof options === 'object' && options.all === true;
    dnsLookup(hostname, { all: true, family }, (error, addresses) => {
      if (error) return callback(error, all ? [] : '', 0);
      const reasons = addresses.map((entry) => this.refusal(entry.address));
      const kept = addresses.filter((_, index) => reasons[index] === null);
      if (kept.length === 0) {
        const refused = Object.assign(new Error(`refused: ${hostname} resolves to ${reasons.filter(Boolean).join('; ')}`), { code: 'ETARGETREFUSED' });
        return callback(refused, all ? [] : '', 0);
      }
      if (all) callback(null, kept);
      else callback(null, kept[0].address, kept[0].family);
    });
  };

  /** The refusal for a URL whose host is an address literal (no lookup runs for those). */
  literalRefusal(url: URL): string | null {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    return isIP(host) ? this.refusal(host) : null;
  }
}

/** Why `text` cannot be a subscription URL, or null: http(s) only, https only in production. */
export function urlProblem(text: string, production: boolean, policy: TargetPolicy): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http or https URL';
  if (production && url.protocol !== 'https:') return 'must be an https URL when NODE_ENV=production';
  if (url.username || url.password) return 'must not carry credentials';
  const refusal = policy.literalRefusal(url);
  return refusal ? `is refused: ${refusal}` : null;
}
