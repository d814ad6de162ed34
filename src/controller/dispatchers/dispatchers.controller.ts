import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { Answers, Refuses } from '../../shared/http/openapi-decorators';
import { CurrentPrincipal, OperatorOnly, OperatorOrScope, Principal } from '../auth/auth.decorators';
import { DispatcherCheckinDto, DispatcherHeartbeatDto, DispatcherRebindDto } from './dispatchers.dto';
import { DispatchersService, DispatcherView } from './dispatchers.service';
import { AuditResource } from '../audit/audit.decorators';

@ApiTags('dispatchers')
@AuditResource('dispatcher', { param: 'slug', answer: 'dispatcher_slug' })
@Controller('api/v1/dispatchers')
export class DispatchersController {
  constructor(private readonly dispatchers: DispatchersService) {}

  @Post('checkin')
  @ApiOperation({ summary: 'Register a dispatcher, or update it by name; its api_key is kept encrypted' })
  @HttpCode(200)
  @OperatorOrScope('dispatchers:write')
  @Answers(200, 'DispatcherCheckinAnswer', 'Registered (created) or updated')
  @Refuses({ 409: 'conflict: the slug is taken by another dispatcher, or the name is registered by another principal' })
  async checkin(@Body() dto: DispatcherCheckinDto, @CurrentPrincipal() principal: Principal) {
    const { action, dispatcher } = await this.dispatchers.checkin(dto, principal);
    return { status: 'ok', action, dispatcher_guid: dispatcher.guid, dispatcher_slug: dispatcher.slug };
  }

  @Post('heartbeat')
  @ApiOperation({ summary: 'A dispatcher is alive; unknown guid: 404, check in again' })
  @HttpCode(200)
  @OperatorOrScope('dispatchers:write')
  @Answers(200, 'DispatcherHeartbeatAnswer', 'Recorded')
  @Refuses({ 404: 'not_found: unknown dispatcher_guid; check in again', 409: 'conflict: the dispatcher is registered by another principal' })
  async heartbeat(@Body() dto: DispatcherHeartbeatDto, @CurrentPrincipal() principal: Principal) {
    const dispatcher = await this.dispatchers.heartbeat(dto, principal);
    return { status: 'ok', dispatcher_guid: dispatcher.guid, heartbeat_interval_seconds: dispatcher.heartbeatIntervalSeconds };
  }

  @Post(':slug/rebind')
  @ApiOperation({ summary: 'Bind a dispatcher to the OAuth client client_id, or (none given) to whoever checks in next under its name' })
  @HttpCode(200)
  @OperatorOnly()
  @Answers(200, 'Dispatcher', 'The dispatcher with its new binding')
  @Refuses({ 400: 'invalid: client_id is not a UUID', 404: 'not_found: no such dispatcher' })
  async rebind(@Param('slug') slug: string, @Body() dto: DispatcherRebindDto): Promise<DispatcherView> {
    return this.dispatchers.view(await this.dispatchers.rebind(slug, dto.client_id ?? null));
  }

  @Get()
  @ApiOperation({ summary: 'Dispatchers with their state: online, stale or offline' })
  @OperatorOrScope('dispatchers:read')
  @Answers(200, { type: 'array', items: { $ref: '#/components/schemas/Dispatcher' } }, 'Every dispatcher')
  async list(): Promise<DispatcherView[]> {
    const now = new Date();
    return (await this.dispatchers.list()).map((dispatcher) => this.dispatchers.view(dispatcher, now));
  }

  @Get(':slug')
  @ApiOperation({ summary: 'One dispatcher by slug' })
  @OperatorOrScope('dispatchers:read')
  @Answers(200, 'Dispatcher', 'The dispatcher')
  @Refuses({ 404: 'not_found: no such dispatcher' })
  async detail(@Param('slug') slug: string): Promise<DispatcherView> {
    return this.dispatchers.view(await this.dispatchers.getBySlug(slug));
  }
}
