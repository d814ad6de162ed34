import { Global, Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditController } from './audit.controller';
import { AuditEntry } from './audit.entity';
import { AuditInterceptor } from './audit.interceptor';
import { AuditRepository } from './audit.repository';
import { AuditService } from './audit.service';
import { AuditTrail } from './audit-trail';
import { AuditWriter } from './audit-writer';

/**
 * Global so the auth guard can record the refusals it makes; the interceptor is the
 * controller's, for every route.
 */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([AuditEntry])],
  controllers: [AuditController],
  providers: [AuditRepository, AuditService, AuditTrail, AuditWriter, { provide: APP_INTERCEPTOR, useClass: AuditInterceptor }],
  exports: [AuditTrail, AuditRepository],
})
export class AuditModule {}
