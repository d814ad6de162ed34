import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { Authenticated, CurrentPrincipal } from './auth.decorators';
import { Principal } from './principal';

@ApiTags('auth')
@Controller('api/v1/auth')
export class AuthController {
  @Get('whoami')
  @Authenticated()
  @ApiOperation({ summary: 'The caller as the API sees it: kind, id, name and scopes' })
  whoami(@CurrentPrincipal() principal: Principal): Principal {
    return principal;
  }
}
