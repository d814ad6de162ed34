import * as fs from 'node:fs';
import { AddressInfo } from 'node:net';

export interface S3Server {
  endpoint: string;
  stop(): Promise<void>;
}

/** s3rver on a loopback port: the S3 protocol for the `minio` client, with files in `folder`. */
export async function startS3Server(folder: string): Promise<S3Server> {
  fs.mkdirSync(folder, { recursive: true });
  // s3rver has no type declarations.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const S3rver = require('s3rver');
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: folder });
  const address = (await server.run()) as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    stop: () => server.close(),
  };
}
