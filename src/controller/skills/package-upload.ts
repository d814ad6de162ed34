import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  CallHandler, createParamDecorator, ExecutionContext, Inject, Injectable, Logger, NestInterceptor, OnApplicationBootstrap,
} from '@nestjs/common';
import type { Request, RequestHandler, Response } from 'express';
import multer, { MulterError } from 'multer';
import { finalize, Observable } from 'rxjs';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { DomainError } from '../../shared/errors/domain-error';

/** A package received in full: a temporary file, its size and its SHA-256. */
export interface ReceivedPackage {
  path: string;
  sizeBytes: number;
  contentHash: string;
}

const PARTIAL_SUFFIX = '.zip.partial';

type PackageRequest = Request & { skillPackage?: ReceivedPackage };
type StoredPart = Partial<Express.Multer.File> & { contentHash: string };

/**
 * A multer storage engine that streams the `file` part to a temporary file, hashing and
 * counting as the bytes arrive, so a package is never held whole in memory. A part that
 * fails half-way (client gone, size limit) leaves no file behind.
 */
export class HashingTempStorage implements multer.StorageEngine {
  constructor(private readonly folder: string) {}

  _handleFile(_request: Request, file: Express.Multer.File, callback: (error?: unknown, info?: StoredPart) => void): void {
    const target = path.join(this.folder, `${randomUUID()}${PARTIAL_SUFFIX}`);
    const hash = createHash('sha256');
    let size = 0;
    const meter = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    fs.mkdir(this.folder, { recursive: true })
      .then(() => pipeline(file.stream, meter, createWriteStream(target, { flags: 'wx' })))
      .then(
        () => callback(null, { path: target, size, contentHash: hash.digest('hex') }),
        (error: unknown) => fs.rm(target, { force: true }).finally(() => callback(error)),
      );
  }

  _removeFile(_request: Request, file: Express.Multer.File, callback: (error: Error | null) => void): void {
    fs.rm(file.path, { force: true }).then(() => callback(null), callback);
  }
}

/**
 * Receives `multipart/form-data` with one part named `file` into DATA_DIR/tmp, within
 * MAX_PACKAGE_BYTES, and removes the temporary file once the handler is done.
 */
@Injectable()
export class PackageUploadInterceptor implements NestInterceptor {
  private readonly receive: RequestHandler;
  /** Largest body worth reading: the package plus room for part headers and a few small fields. */
  private readonly maxBodyBytes: number;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.receive = multer({
      storage: new HashingTempStorage(path.join(config.dataDir, 'tmp')),
      limits: { fileSize: config.maxPackageBytes, files: 1, fields: 20, parts: 25, fieldSize: 16 * 1024 },
    }).single('file');
    this.maxBodyBytes = config.maxPackageBytes + 1024 * 1024;
  }

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const request = context.switchToHttp().getRequest<PackageRequest>();
    const response = context.switchToHttp().getResponse<Response>();
    if (!/^multipart\/form-data\s*(;|$)/i.test(request.headers['content-type'] ?? '')) {
      throw new DomainError('unsupported_media_type', 'Send the package as multipart/form-data with one part named "file".');
    }
    if (Number(request.headers['content-length']) > this.maxBodyBytes) {
      // Refused before reading; the rest of the body is drained within a bound (drainUnreadBody).
      throw new DomainError('payload_too_large', 'The package is larger than MAX_PACKAGE_BYTES allows.');
    }
    await new Promise<void>((resolve, reject) => {
      this.receive(request, response, (error?: unknown) => (error ? reject(uploadError(error)) : resolve()));
    });
    const part = request.file as (Express.Multer.File & { contentHash?: string }) | undefined;
    if (!part?.path || !part.contentHash) {
      throw DomainError.invalid({ file: ['is required: a multipart part named "file" holding the zip package'] });
    }
    request.skillPackage = { path: part.path, sizeBytes: part.size, contentHash: part.contentHash };
    return next.handle().pipe(finalize(() => void fs.rm(part.path, { force: true })));
  }
}

/**
 * Removes temporary package files a crashed process left in DATA_DIR/tmp. Only old ones:
 * another replica sharing the folder may be receiving a package right now.
 */
@Injectable()
export class TemporaryPackageSweeper implements OnApplicationBootstrap {
  private readonly logger = new Logger(TemporaryPackageSweeper.name);

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async onApplicationBootstrap(): Promise<void> {
    const folder = path.join(this.config.dataDir, 'tmp');
    const names = await fs.readdir(folder).catch(() => [] as string[]);
    const cutoff = Date.now() - 60 * 60 * 1000;
    let removed = 0;
    for (const name of names.filter((n) => n.endsWith(PARTIAL_SUFFIX))) {
      const file = path.join(folder, name);
      const stats = await fs.stat(file).catch(() => null);
      if (stats && stats.mtimeMs < cutoff) {
        await fs.rm(file, { force: true });
        removed += 1;
      }
    }
    if (removed > 0) this.logger.log(`Removed ${removed} temporary package files left in ${folder}`);
  }
}

/** The package `PackageUploadInterceptor` received. */
export const UploadedPackage = createParamDecorator((_data: unknown, context: ExecutionContext): ReceivedPackage => {
  const received = context.switchToHttp().getRequest<PackageRequest>().skillPackage;
  if (!received) throw new Error('UploadedPackage needs PackageUploadInterceptor on the handler');
  return received;
});

function uploadError(error: unknown): unknown {
  if (error instanceof MulterError) {
    switch (error.code) {
      case 'LIMIT_FILE_SIZE':
        return new DomainError('payload_too_large', 'The package is larger than MAX_PACKAGE_BYTES allows.');
      case 'LIMIT_UNEXPECTED_FILE':
        return DomainError.invalid({ file: [`is required: got a file part named "${error.field}" instead of "file"`] });
      case 'LIMIT_FILE_COUNT':
        return DomainError.invalid({ file: ['must be the only file part'] });
      default:
        return new DomainError('parse_error', `The multipart body is refused: ${error.message}.`);
    }
  }
  // File system trouble (disk full, permissions) is ours; anything else is a broken body.
  if ((error as NodeJS.ErrnoException)?.syscall) return error;
  const reason = error instanceof Error ? error.message : String(error);
  return new DomainError('parse_error', `The multipart body could not be read: ${reason}.`);
}
