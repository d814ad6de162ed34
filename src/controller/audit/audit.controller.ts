import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { keysetRequest } from '../../shared/http/page';
import { Answers } from '../../shared/http/openapi-decorators';
import { OperatorOnly } from '../auth/auth.decorators';
import { ListAuditQueryDto } from './audit.dto';
import { AuditService } from './audit.service';

@ApiTags('audit')
@Controller('api/v1/audit')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @OperatorOnly()
  @ApiOperation({ summary: 'The audit trail, newest first: who changed what, when, from where, and the outcome' })
  @Answers(200, 'AuditPage', 'A page of audit rows')
  list(@Query() query: ListAuditQueryDto) {
    const { actor, action, resource_type, resource_id, since } = query;
    return this.audit.list({ actor, action, resource_type, resource_id, since }, keysetRequest(query));
  }
}
