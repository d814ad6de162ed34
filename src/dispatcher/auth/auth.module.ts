import { Global, Module } from '@nestjs/common';
import { AgentKeyGuard } from './agent-auth';
import { AgentKeyStrategy } from './agent-key.strategy';
import { ApiKeyGuard } from './api-key.guard';
import { ApiKeyStrategy } from './api-key.strategy';

/** Global so `@ApiKeyAuth()` and `@AgentAuth()` work on any dispatcher controller. */
@Global()
@Module({
  providers: [ApiKeyStrategy, AgentKeyStrategy, ApiKeyGuard, AgentKeyGuard],
  exports: [ApiKeyStrategy, AgentKeyStrategy, ApiKeyGuard, AgentKeyGuard],
})
export class DispatcherAuthModule {}
