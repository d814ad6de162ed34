import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { keysetRequest } from '../../shared/http/page';
import { KeysetPageQueryDto } from '../../shared/http/page-query.dto';
import { Answers, AnswersEmpty, Refuses } from '../../shared/http/openapi-decorators';
import { CurrentPrincipal, OperatorOrScope, Principal } from '../auth/auth.decorators';
import { SubscriptionDeliveryService } from './subscription-delivery.service';
import { CreateSubscriptionDto, ListDeliveriesQueryDto, ReplaySinceDto, UpdateSubscriptionDto } from './subscriptions.dto';
import { SubscriptionsService } from './subscriptions.service';
import { AuditResource } from '../audit/audit.decorators';

const NOT_FOUND = { 404: 'not_found: no such subscription (or not this client\'s)' };

@ApiTags('subscriptions')
@AuditResource('subscription', { param: 'id', answer: 'id' })
@Controller('api/v1/subscriptions')
export class SubscriptionsController {
  constructor(
    private readonly subscriptions: SubscriptionsService,
    private readonly delivery: SubscriptionDeliveryService,
  ) {}

  @Post()
  @OperatorOrScope('subscriptions:write')
  @ApiOperation({ summary: 'Subscribe an endpoint to events; the answer holds its signing secret, shown this once. An OAuth client also needs tasks:read for task events and dispatchers:read for dispatcher.state' })
  @Answers(201, 'SubscriptionWithSecret', 'The subscription and its secret')
  async create(@Body() body: CreateSubscriptionDto, @CurrentPrincipal() principal: Principal) {
    const created = await this.subscriptions.create(body, principal);
    this.delivery.subscriptionsChanged();
    return created;
  }

  @Get()
  @OperatorOrScope('subscriptions:read')
  @ApiOperation({ summary: 'List subscriptions, newest first (an OAuth client sees its own)' })
  @Answers(200, 'SubscriptionPage', 'A page of subscriptions')
  list(@Query() query: KeysetPageQueryDto, @CurrentPrincipal() principal: Principal) {
    return this.subscriptions.list(keysetRequest(query), principal);
  }

  @Get(':id')
  @OperatorOrScope('subscriptions:read')
  @ApiOperation({ summary: 'One subscription' })
  @Answers(200, 'Subscription', 'The subscription')
  @Refuses(NOT_FOUND)
  get(@Param('id') id: string, @CurrentPrincipal() principal: Principal) {
    return this.subscriptions.get(id, principal);
  }

  @Patch(':id')
  @OperatorOrScope('subscriptions:write')
  @ApiOperation({ summary: 'Change the URL, event types, filter, description or enabled' })
  @Answers(200, 'Subscription', 'The subscription as stored')
  @Refuses(NOT_FOUND)
  async update(@Param('id') id: string, @Body() body: UpdateSubscriptionDto, @CurrentPrincipal() principal: Principal) {
    const updated = await this.subscriptions.update(id, body, principal);
    this.delivery.subscriptionsChanged();
    return updated;
  }

  @Delete(':id')
  @HttpCode(204)
  @OperatorOrScope('subscriptions:write')
  @ApiOperation({ summary: 'Delete a subscription and its delivery log' })
  @AnswersEmpty(204, 'Deleted')
  @Refuses(NOT_FOUND)
  async remove(@Param('id') id: string, @CurrentPrincipal() principal: Principal): Promise<void> {
    await this.subscriptions.remove(id, principal);
    this.delivery.subscriptionsChanged();
  }

  @Post(':id/rotate-secret')
  @HttpCode(200)
  @OperatorOrScope('subscriptions:write')
  @ApiOperation({ summary: 'A new signing secret; the previous one keeps signing beside it for 24 hours' })
  @Answers(200, 'SubscriptionWithSecret', 'The subscription and its new secret')
  @Refuses(NOT_FOUND)
  rotateSecret(@Param('id') id: string, @CurrentPrincipal() principal: Principal) {
    return this.subscriptions.rotateSecret(id, principal);
  }

  @Get(':id/deliveries')
  @OperatorOrScope('subscriptions:read')
  @ApiOperation({ summary: 'The subscription\'s deliveries, newest first, each with every attempt' })
  @Answers(200, 'SubscriptionDeliveryPage', 'A page of deliveries')
  @Refuses(NOT_FOUND)
  deliveries(@Param('id') id: string, @Query() query: ListDeliveriesQueryDto, @CurrentPrincipal() principal: Principal) {
    return this.subscriptions.deliveries(id, { ...keysetRequest(query), status: query.status }, principal);
  }

  @Post(':id/deliveries/:deliveryId/replay')
  @HttpCode(202)
  @OperatorOrScope('subscriptions:write')
  @ApiOperation({ summary: 'Send one delivery again (a new attempt sequence, the same webhook-id)' })
  @Answers(202, 'SubscriptionDelivery', 'The delivery, due now')
  @Refuses({ 404: 'not_found: no such subscription or delivery', 409: 'conflict: an attempt of it is under way' })
  async replayDelivery(@Param('id') id: string, @Param('deliveryId') deliveryId: string, @CurrentPrincipal() principal: Principal) {
    const delivery = await this.subscriptions.replayDelivery(id, deliveryId, principal);
    this.delivery.kick();
    return delivery;
  }

  @Post(':id/replay')
  @HttpCode(202)
  @OperatorOrScope('subscriptions:write')
  @ApiOperation({ summary: 'Send again every event since a time, including those the subscription missed while disabled' })
  @Answers(202, 'SubscriptionReplay', 'How many deliveries are due now')
  @Refuses(NOT_FOUND)
  async replaySince(@Param('id') id: string, @Body() body: ReplaySinceDto, @CurrentPrincipal() principal: Principal) {
    const replayed = await this.subscriptions.replaySince(id, body.since, principal);
    this.delivery.kick();
    return replayed;
  }
}
