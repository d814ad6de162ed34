import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfig } from '../config/config';
import { roleDataSourceOptions, SchemaRole } from './data-sources';
import { SCHEMA_PARTS } from './schema-parts';

/** The role's TypeORM connection, with exactly that role's entities. */
@Module({})
export class DatabaseModule {
  static forRole(role: SchemaRole, config: AppConfig): DynamicModule {
    const options = roleDataSourceOptions(
      role,
      { url: config.databaseUrl!, poolSize: config.databasePoolSize, migrationsRun: false },
      { entities: SCHEMA_PARTS[role].entities, migrations: [] },
    );
    return {
      module: DatabaseModule,
      imports: [TypeOrmModule.forRoot({ ...options, retryAttempts: 2, retryDelay: 1000 })],
    };
  }
}
