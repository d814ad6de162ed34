import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { Answers } from '../../shared/http/openapi-decorators';
import { Authenticated, CurrentPrincipal } from './auth.decorators';
import { Principal } from './principal';

@ApiTags('auth')
@Controller('api/v1/auth')
export class AuthController {
  @Get('whoami')
  @Authenticated()
  @ApiOperation({ summary: 'The caller as the API sees it: kind, id, name and scopes' })
  @Answers(200, 'Principal', 'The authenticated caller')
  whoami(@CurrentPrincipal() principal: Principal): Principal {
    return principal;
  }
}
