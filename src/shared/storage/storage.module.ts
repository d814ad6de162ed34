import { DynamicModule, Global, Module } from '@nestjs/common';
import * as path from 'node:path';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { FolderObjectStorage } from './folder-object-storage';
import { OBJECT_STORAGE, ObjectStorage } from './object-storage';
import { S3ObjectStorage } from './s3-object-storage';

/** S3 when S3_ENDPOINT is set, else a folder under DATA_DIR. */
export function createObjectStorage(config: Pick<AppConfig, 's3' | 'dataDir'>): ObjectStorage {
  return config.s3 ? new S3ObjectStorage(config.s3) : new FolderObjectStorage(path.join(config.dataDir, 'objects'));
}

@Global()
@Module({})
export class StorageModule {
  static forRoot(): DynamicModule {
    return {
      module: StorageModule,
      providers: [{ provide: OBJECT_STORAGE, inject: [APP_CONFIG], useFactory: (config: AppConfig) => createObjectStorage(config) }],
      exports: [OBJECT_STORAGE],
    };
  }
}
