import { Module } from '@nestjs/common';
import { TasksModule } from '../tasks/tasks.module';
import { ReplicaHeartbeatService } from './replica-heartbeat.service';
import { ReplicasRepository } from './replicas.repository';

@Module({
  imports: [TasksModule],
  providers: [ReplicasRepository, ReplicaHeartbeatService],
})
export class ReplicasModule {}
