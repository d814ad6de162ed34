import * as ipaddr from 'ipaddr.js';
import { z } from 'zod';

/** Svix's retry schedule: the waits, in seconds, before the 2nd to 8th attempt of a delivery. */
export const SVIX_RETRY_SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 36000];

/** The settings of outbound event delivery (SUBSCRIPTION_*). */
export interface SubscriptionSettings {
  /** Address blocks a subscription may reach although they are private, loopback, link-local, CGNAT or ULA. */
  allowedCidrs: [ipaddr.IPv4 | ipaddr.IPv6, number][];
  /** Seconds to wait before each retry; its length is the number of retries. */
  retrySchedule: number[];
  /** Attempts one controller process has under way to one subscription at most. */
  concurrencyPerEndpoint: number;
}

interface SettingsReader {
  problems: string[];
  raw(name: string): string | undefined;
  int(name: string, fallback: number, min: number, max: number): number;
}

const commaList = z.string().transform((text) => text.split(',').map((item) => item.trim()).filter(Boolean));

const cidrList = commaList.pipe(z.array(z.string().transform((text, ctx) => {
  try {
    return ipaddr.parseCIDR(text);
  } catch {
    ctx.addIssue({ code: 'custom', message: `${text} is not a CIDR block` });
    return z.NEVER;
  }
})));

const secondsList = commaList.pipe(z.array(z.string().regex(/^\d+$/).transform(Number).pipe(z.number().int().min(0).max(7 * 86400))).min(0).max(20));

function parse<T>(r: SettingsReader, name: string, fallback: T, schema: z.ZodType<T>, wants: string): T {
  const value = r.raw(name);
  if (value === undefined) return fallback;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  r.problems.push(`${name} must be ${wants} (got "${value}")`);
  return fallback;
}

export function readSubscriptionSettings(r: SettingsReader): SubscriptionSettings {
  return {
    allowedCidrs: parse(r, 'SUBSCRIPTION_ALLOWED_CIDRS', [], cidrList, 'a comma-separated list of CIDR blocks such as 127.0.0.1/32,10.0.0.0/8'),
    retrySchedule: parse(r, 'SUBSCRIPTION_RETRY_SCHEDULE', SVIX_RETRY_SCHEDULE, secondsList, 'a comma-separated list of at most 20 waits in seconds'),
    concurrencyPerEndpoint: r.int('SUBSCRIPTION_CONCURRENCY_PER_ENDPOINT', 4, 1, 64),
  };
}
