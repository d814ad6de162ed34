import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { TasksModule } from '../tasks/tasks.module';
import { WorkflowsModule } from '../workflows/workflows.module';
import { DeliveriesService } from './deliveries.service';
import { DeliveryLedger } from './delivery-ledger';
import { WebhookDelivery } from './webhook-delivery.entity';
import { WebhookHotRoutes } from './webhook-hot-routes';
import { WebhookRouter } from './webhook-router';
import { WebhooksController } from './webhooks.controller';
import { WebhooksService } from './webhooks.service';

@Module({
  imports: [TypeOrmModule.forFeature([WebhookDelivery]), TasksModule, WorkflowsModule],
  controllers: [WebhooksController],
  providers: [DeliveryLedger, WebhookRouter, WebhooksService, DeliveriesService, WebhookHotRoutes],
  exports: [DeliveryLedger],
})
export class WebhooksModule {}
