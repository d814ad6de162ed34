import { Controller, Get, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { Answers, Refuses } from '../../shared/http/openapi-decorators';
import { WebhookIngestDocs } from './webhooks.openapi';
import type { Response } from 'express';
import { keysetRequest } from '../../shared/http/page';
import type { RawBodyRequest } from '../../shared/http/configure-app';
import { CurrentPrincipal, OperatorOnly, OperatorOrScope, Principal } from '../auth/auth.decorators';
import { DeliveriesService } from './deliveries.service';
import { ListDeliveriesQueryDto } from './webhooks.dto';
import { WebhooksService } from './webhooks.service';
import { AuditResource } from '../audit/audit.decorators';

@ApiTags('webhooks')
@AuditResource('webhook_delivery', { param: 'id', answer: 'delivery' })
@Controller('api/v1/webhooks')
export class WebhooksController {
  constructor(
    private readonly webhooks: WebhooksService,
    private readonly deliveries: DeliveriesService,
  ) {}

  /** Inbound events; the sender's signature is the only credential. */
  @Post()
  @WebhookIngestDocs()
  async ingest(@Req() request: RawBodyRequest, @Res({ passthrough: true }) response: Response) {
    const answer = await this.webhooks.ingest({
      headers: request.headers,
      rawBody: request.rawBody ?? Buffer.alloc(0),
      body: request.body,
      formEncoded: request.is('application/x-www-form-urlencoded') === 'application/x-www-form-urlencoded',
      refusal: request.bodyRefusal,
      address: request.ip ?? 'unknown',
    });
    response.status(answer.status);
    return answer.body;
  }

  @Get('deliveries')
  @OperatorOrScope('webhooks:read')
  @ApiOperation({ summary: 'The delivery ledger, newest first' })
  @Answers(200, 'DeliveryPage', 'A page of deliveries')
  list(@Query() query: ListDeliveriesQueryDto) {
    const { limit, offset, cursor, count, ...filters } = query;
    return this.deliveries.list(filters, keysetRequest({ limit, offset, cursor, count }));
  }

  @Get('deliveries/:id')
  @OperatorOrScope('webhooks:read')
  @ApiOperation({ summary: 'One delivery, with its payload' })
  @Answers(200, 'Delivery', 'The delivery')
  @Refuses({ 404: 'not_found: no such delivery' })
  get(@Param('id') id: string) {
    return this.deliveries.get(id);
  }

  @Post('deliveries/:id/replay')
  @OperatorOnly()
  @ApiOperation({ summary: 'Route a kept delivery again, as a new ledger entry' })
  @Answers(200, 'DeliveryReplay', 'Routed to a workflow; its task is stored')
  @Answers(202, 'DeliveryReplay', 'No workflow matches (status: ignored)')
  @Refuses({ 404: 'not_found: no such delivery', 409: 'conflict: its payload was not kept whole, or it was refused' })
  async replay(@Param('id') id: string, @CurrentPrincipal() principal: Principal, @Res({ passthrough: true }) response: Response) {
    const answer = await this.deliveries.replay(id, principal.name);
    response.status(answer.status);
    return answer.body;
  }
}
