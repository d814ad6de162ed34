import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Decrypted keys remembered: one per dispatcher registration, so a handful; past this the memo starts again. */
const REMEMBERED = 256;

/**
 * Keeps a dispatcher's `api_key` readable by the controller only: AES-256-GCM with a key
 * derived from SECRET_KEY by HKDF-SHA256. Stored as `v1:<base64(iv | tag | ciphertext)>`.
 */
export class ApiKeyCipher {
  private readonly key: Buffer;
  /**
   * Each task sent to a dispatcher needs its key: the same stored value decrypts to the same key
   * (GCM checks it), so it is decrypted once, not once a task. Keyed by the stored value, so a
   * rotated key is a new entry.
   */
  private readonly decrypted = new Map<string, string>();

  constructor(secretKey: string) {
    if (!secretKey) throw new Error('SECRET_KEY is needed to keep dispatcher API keys');
    this.key = Buffer.from(hkdfSync('sha256', secretKey, 'agent-task-controller', 'dispatcher-api-key', 32));
  }

  encrypt(plain: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64')}`;
  }

  /** The plain key; throws when the value was not made with this SECRET_KEY or was altered. */
  decrypt(stored: string): string {
    const known = this.decrypted.get(stored);
    if (known !== undefined) return known;
    const plain = this.decryptOnce(stored);
    if (this.decrypted.size >= REMEMBERED) this.decrypted.clear();
    this.decrypted.set(stored, plain);
    return plain;
  }

  private decryptOnce(stored: string): string {
    const [version, payload] = stored.split(':', 2);
    if (version !== VERSION || !payload) throw new Error('Unknown encrypted API key format');
    const bytes = Buffer.from(payload, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}
