import createClient, { Client } from 'openapi-fetch';
import type { paths as ControllerPaths } from './controller-api';
import type { paths as DispatcherPaths } from './dispatcher-api';

export type ControllerClient = Client<ControllerPaths>;
export type DispatcherClient = Client<DispatcherPaths>;

/** Clients typed by the types openapi-typescript generates from the served documents. */
export const controllerClient = (baseUrl: string): ControllerClient => createClient<ControllerPaths>({ baseUrl });
export const dispatcherClient = (baseUrl: string): DispatcherClient => createClient<DispatcherPaths>({ baseUrl });

/** For bodies sent as they are (multipart forms, raw bytes), bypassing the JSON serializer. */
export const asIs = <T>(body: T): T => body;
