import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { SubscriptionDeliveryService } from './subscription-delivery.service';
import { SubscriptionGauges } from './subscription-metrics';
import { SubscriptionOutbox } from './subscription-outbox';
import { SubscriptionsController } from './subscriptions.controller';
import { SubscriptionsService } from './subscriptions.service';

@Module({
  imports: [EventsModule],
  controllers: [SubscriptionsController],
  providers: [SubscriptionsService, SubscriptionDeliveryService, SubscriptionGauges, SubscriptionOutbox],
  exports: [SubscriptionOutbox],
})
export class SubscriptionsModule {}
