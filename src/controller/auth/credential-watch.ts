import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AuthService, parseAuthorization } from './auth.service';

/** How often a long-lived stream's credential is looked up again. */
const RECHECK_MS = 10_000;

/**
 * Whether the credential a stream was opened with still holds (not expired, not revoked,
 * its OAuth client not deleted). Checks are shared per credential on this replica for
 * RECHECK_MS, so a thousand streams of one client cost one lookup every ten seconds.
 */
@Injectable()
export class CredentialWatch {
  private readonly checks = new Map<string, { at: number; alive: Promise<boolean> }>();

  constructor(private readonly auth: AuthService) {}

  /** A check for the streams opened with this `Authorization` header. */
  aliveCheck(authorization: string | undefined): () => Promise<boolean> {
    const key = createHash('sha256').update(authorization ?? '').digest('hex');
    return () => {
      const now = Date.now();
      let check = this.checks.get(key);
      if (!check || now - check.at >= RECHECK_MS) {
        check = { at: now, alive: this.lookup(authorization) };
        this.checks.set(key, check);
        this.forgetOld(now);
      }
      return check.alive;
    };
  }

  private async lookup(authorization: string | undefined): Promise<boolean> {
    const credentials = parseAuthorization(authorization);
    if (!credentials) return false;
    try {
      const principal = credentials.scheme === 'token' ? await this.auth.resolveOperator(credentials.value) : await this.auth.resolveClient(credentials.value);
      return principal !== null;
    } catch {
      // The database did not answer: the stream goes on, and the next check decides.
      return true;
    }
  }

  private forgetOld(now: number): void {
    if (this.checks.size < 1000) return;
    for (const [key, check] of this.checks) if (now - check.at >= RECHECK_MS) this.checks.delete(key);
  }
}
