import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DispatchersController } from './dispatchers.controller';
import { Dispatcher } from './dispatchers.entity';
import { DispatchersService } from './dispatchers.service';

@Module({
  imports: [TypeOrmModule.forFeature([Dispatcher])],
  controllers: [DispatchersController],
  providers: [DispatchersService],
  exports: [DispatchersService],
})
export class DispatchersModule {}
