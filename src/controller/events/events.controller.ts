import { Controller, Get, Headers, Query, Res } from '@nestjs/common';
import { ApiHeader, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AnswersWith, Refuses } from '../../shared/http/openapi-decorators';
import type { Response } from 'express';
import { DomainError } from '../../shared/errors/domain-error';
import { CurrentPrincipal, OperatorOrScope, Principal } from '../auth/auth.decorators';
import { StreamSlots } from '../../shared/http/stream-slots';
import { StreamLeases } from '../streams/stream-leases';
import { CredentialWatch } from '../auth/credential-watch';
import { EventsQueryDto } from './events.dto';
import { EventsService } from './events.service';
import { SseSink } from './sse-sink';

@ApiTags('events')
@Controller('api/v1/events')
export class EventsController {
  constructor(
    private readonly events: EventsService,
    private readonly slots: StreamSlots,
    private readonly leases: StreamLeases,
    private readonly credentials: CredentialWatch,
  ) {}

  @Get()
  @ApiOperation({
    summary: 'Live events (text/event-stream): task.created, task.status, task.progress, task.finished, dispatcher.state; '
      + 'each has an id, and Last-Event-ID resumes within EVENT_RETENTION_HOURS',
  })
  @AnswersWith(200, 'text/event-stream', 'Server-sent events until the client disconnects: task.created, task.status, task.progress, task.finished, dispatcher.state')
  @Refuses({ 400: 'invalid: a query parameter is out of range', 429: 'throttled: STREAMS_PER_PRINCIPAL or STREAMS_PER_REPLICA reached; Retry-After says when to try again' })
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'Resume after this event id' })
  @OperatorOrScope('tasks:read')
  async stream(
    @Query() query: EventsQueryDto,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Headers('authorization') authorization: string | undefined,
    @CurrentPrincipal() principal: Principal,
    @Res() response: Response,
  ): Promise<void> {
    const after = lastEventId !== undefined && lastEventId !== '' ? parseEventId(lastEventId) : query.last_event_id;
    this.slots.take(response);
    await this.leases.take(`${principal.kind}:${principal.id}`, response);
    const alive = this.credentials.aliveCheck(authorization);
    return this.events.open(new SseSink(response), { after, taskGuid: query.task_guid, alive });
  }
}

function parseEventId(value: string): number {
  if (!/^\d{1,15}$/.test(value.trim())) throw DomainError.invalid({ 'Last-Event-ID': ['must be an event id from this stream'] });
  return Number(value.trim());
}
