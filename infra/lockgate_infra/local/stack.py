"""``LocalStack``: moto on loopback with every table, queue, bucket and secret from the template,
and the template's functions loaded as Lambda would load them."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

import boto3

from lockgate.runtime.deps import OnePerService
from lockgate_infra.local.botocore_models import share_botocore_models
from lockgate_infra.local.console import inside
from lockgate_infra.local.environment import (
    DUMMY_CREDENTIALS,
    EnvironmentPatch,
    leave_real_aws,
    localise_api_url,
    names_local_api,
    point_at_moto,
    warn_of_clash,
)
from lockgate_infra.local.gateway import Gateway
from lockgate_infra.local.lambda_api import LAMBDA_ENDPOINT, LambdaApi, function_names
from lockgate_infra.local.log_keys import FunctionKeys, adopt
from lockgate_infra.local.moto_server import MotoServer
from lockgate_infra.local.poller import SqsPoller
from lockgate_infra.local.provision import create_resources
from lockgate_infra.local.runtime import LocalFunction, import_handler_module
from lockgate_infra.local.scheduler import LocalScheduler
from lockgate_infra.local.sources import drain_all, start_sqs_pollers, start_stream_pollers
from lockgate_infra.local.spans import install as install_spans
from lockgate_infra.local.spans import spans_file
from lockgate_infra.local.streams import StreamPoller
from lockgate_infra.local.template import LocalPlan, provider_parameters
from lockgate_infra.serving import Serving

log = logging.getLogger("lockgate_infra.local")


def default_template_path() -> Path:
    """``template.yaml`` in the working directory, else at the root of this checkout."""
    here = Path.cwd() / "template.yaml"
    return here if here.is_file() else Path(__file__).resolve().parents[3] / "template.yaml"


class LocalStack(Serving):
    """The template's AWS resources in an in-process moto server, and its functions ready to invoke.

    Use as a context manager. While it runs, this process's AWS environment points at moto
    (``AWS_ENDPOINT_URL``, dummy credentials, ``us-east-1``); ``stop`` puts it back. ``environment``
    is set over every function's; ``stand_ins`` are the servers playing outside services for it
    (their URLs in ``environment``), kept for whoever drives the stack (``stack.stand_ins[VARIABLE]``).
    """

    def __init__(
        self,
        template_path: str | Path | None = None,
        *,
        config_path: str | Path | None = None,
        parameters: Mapping[str, str] | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
        environment: Mapping[str, str] | None = None,
        reset: bool = True,
        keep_spans: bool = False,
        stand_ins: Mapping[str, Any] | None = None,
    ) -> None:
        self.template_path = Path(template_path or default_template_path()).resolve()
        self.root = self.template_path.parent  # the repository root
        self.spans = install_spans(spans_file(self.root) if keep_spans else None)  # keep: `runs trace`
        self.config_path = Path(config_path or self.root / "lockgate.toml").resolve()
        # Deployed as `sam deploy` deploys this config: its [provider] is the ModelProvider.
        self._parameters = {**_provider_of(self.config_path), **(parameters or {})}
        self.overrides = dict(environment or {})  # applied over every function's environment
        self.stand_ins = dict(stand_ins or {})  # the outside services played for it, by variable
        self._reset = reset
        self._server = MotoServer(host, port)
        self._env = EnvironmentPatch()
        self._functions: dict[str, LocalFunction] = {}
        self._env_owners: dict[str, str] = {}  # variable → the function that set it
        self._load_lock = threading.Lock()
        self._plan: LocalPlan | None = None
        self._session: boto3.session.Session | None = None
        self._clients: OnePerService | None = None  # made once the Invoke API is up
        self.resources: dict[str, str] = {}  # logical id → table/bucket/secret name, or queue URL
        self.gateway: Gateway | None = None
        self.pollers: list[SqsPoller] = []
        self.stream_pollers: list[StreamPoller] = []
        self.scheduler: LocalScheduler | None = None
        self.lambda_api: LambdaApi | None = None  # Lambda's Invoke for the template's functions

    def start(self) -> Self:
        """Start moto, point this process at it, and create every resource in the template."""
        share_botocore_models()  # six functions' sessions, one parse of each service's model
        try:
            leave_real_aws(self._env)
            self._server.start()
            if self._reset:
                self._server.reset()
            point_at_moto(self._env, self.endpoint_url, str(self.config_path))
            self._plan = LocalPlan.from_file(
                self.template_path, self._parameters, endpoint_url=self.endpoint_url
            )
            self._session = boto3.session.Session(
                aws_access_key_id=DUMMY_CREDENTIALS["AWS_ACCESS_KEY_ID"],
                aws_secret_access_key=DUMMY_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
                region_name=self._plan.region,
            )
            self.resources = create_resources(self._plan, self._session, endpoint_url=self.endpoint_url)
            self.resources.update(function_names(self._plan.functions.values()))
            # Lambda's Invoke for the template's functions, where every boto3 Lambda client goes.
            self.lambda_api = LambdaApi.for_plan(self._plan.functions.values(), self.invoke).start()
            self._clients = OnePerService(self._new_client)
            self._env.set(LAMBDA_ENDPOINT, self.lambda_api.url)
            for ignored in self._plan.ignored:
                log.warning("not run locally: %s", ignored)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the scheduler, pollers, gateway and moto; restore the environment."""
        if self.scheduler is not None:
            self.scheduler.stop()
            self.scheduler = None
        for poller in [*self.stream_pollers, *self.pollers]:
            poller.stop()
        self.stream_pollers, self.pollers = [], []
        for server in (self.gateway, self.lambda_api):
            if server is not None:
                server.stop()
        self.gateway, self.lambda_api, self._clients = None, None, None
        self._server.stop()
        self._env.restore()

    @property
    def endpoint_url(self) -> str:
        """Where moto listens: ``http://127.0.0.1:PORT``."""
        return self._server.endpoint_url

    @property
    def plan(self) -> LocalPlan:
        """What was read from the template."""
        if self._plan is None:
            raise RuntimeError("the local stack is not started")
        return self._plan

    @property
    def region(self) -> str:
        """The region of every local resource."""
        return self.plan.region

    def client(self, service: str) -> Any:
        """The boto3 client for ``service`` on this stack's moto (Lambda: its local Invoke API)."""
        if self._clients is None:
            raise RuntimeError("the local stack is not started")
        return self._clients(service)

    def _new_client(self, service: str) -> Any:
        endpoint = self.lambda_api.url if service == "lambda" and self.lambda_api else self.endpoint_url
        return self._session.client(service, endpoint_url=endpoint)  # type: ignore[call-overload,union-attr]

    # -- functions ------------------------------------------------------------------------

    def load_function(self, logical_id: str) -> LocalFunction:
        """Import a function's handler (once) with its environment from the template in ``os.environ``."""
        with self._load_lock:
            if logical_id in self._functions:
                return self._functions[logical_id]
            try:
                plan = self.plan.functions[logical_id]
            except KeyError:
                raise KeyError(f"no function {logical_id!r} in {self.template_path}") from None
            environment = {
                **{key: self._localise(value) for key, value in plan.environment.items()},
                "LOCKGATE_CONFIG": str(self.config_path),
                **self.overrides,
            }
            for key, value in environment.items():
                if key in self._env_owners and os.environ.get(key) != value:
                    self._clash(logical_id, key)
                self._env_owners[key] = logical_id
                self._env.set(key, value)
            # What it logs while imported is its own log, under its own keys.
            keys = FunctionKeys()
            with (
                self._env.hidden(k for k in self._env_owners if k not in environment),
                inside(logical_id),
                keys.invocation(),
            ):
                module = import_handler_module(plan)
            adopt()  # the Powertools logger its import made, or reused: per invocation from now on
            function = LocalFunction(plan, module, keys)
            self._functions[logical_id] = function
            return function

    def invoke(self, logical_id: str, event: Any, request_id: str | None = None) -> Any:
        """One invocation of a function, loading it first if needed."""
        return self.load_function(logical_id).invoke(event, request_id)

    # -- gateway and pollers --------------------------------------------------------------

    def start_gateway(
        self, port: int = 0, *, always_base64: bool = False, load_functions: bool = True
    ) -> Gateway:
        """Serve the template's HttpApi routes on ``127.0.0.1:port`` (0 picks a free port).

        ``load_functions`` False leaves loading the routes' functions to ``load_route_functions``
        (``lockgate local`` first routes their output to a log file named after the port).
        """
        if self.gateway is not None:
            raise RuntimeError(f"the gateway is already serving on {self.gateway.url}")
        # Started before the functions load, so that an API URL in their environment
        # (``https://${WebhookApi}.execute-api...``) can be the gateway's.
        gateway = Gateway(self.plan.routes, self.invoke, port=port, always_base64=always_base64)
        gateway.start()
        self.gateway = gateway
        if load_functions:
            try:
                self.load_route_functions()
            except BaseException:
                gateway.stop()
                self.gateway = None
                raise
        return gateway

    def load_route_functions(self) -> None:
        """Load every routed function now, so that an import error shows now, not at the first request."""
        self._relocalise_loaded_environment()
        for route in self.plan.routes:
            self.load_function(route.function)

    def start_pollers(self, *, wait_seconds: int = 1) -> list[SqsPoller]:
        """One poller per enabled SQS event source, invoking its function as Lambda's mapping would.

        ``wait_seconds`` is the long-poll wait; 0 polls every 50 ms instead (quicker to stop, for tests).
        """
        if self.pollers or self.stream_pollers:
            raise RuntimeError("the pollers are already running")
        # Each poller with clients of its own, as Lambda's event source mapping has.
        where = (self.plan, self.resources, self._new_client, self.invoke, self.load_function)
        self.pollers = start_sqs_pollers(*where, wait_seconds=wait_seconds)
        self.stream_pollers = start_stream_pollers(*where)
        return self.pollers

    def start_scheduler(self, clock_speed: float = 1.0) -> LocalScheduler:
        """Run the template's schedules (``AWS::Scheduler::Schedule`` and ScheduleV2 events) on a clock
        ``clock_speed`` times faster than real time."""
        if self.scheduler is not None:
            raise RuntimeError("the scheduler is already running")
        for function in {schedule.function for schedule in self.plan.schedules if schedule.enabled}:
            self.load_function(function)  # an import error shows now, not at the first tick
        scheduler = LocalScheduler(self.plan.schedules, self.invoke, clock_speed=clock_speed)
        scheduler.start()
        self.scheduler = scheduler
        return scheduler

    def drain(self, timeout: float = 30.0, *, include_retries: bool = False) -> bool:
        """Wait until every polled queue is empty and nothing is being processed; False on timeout.

        ``include_retries`` also waits for messages hidden by a visibility timeout to come back and
        be processed (or dead-lettered).
        """
        return drain_all([*self.pollers, *self.stream_pollers], timeout, include_retries=include_retries)

    # -- internals ------------------------------------------------------------------------

    def _clash(self, logical_id: str, key: str) -> None:
        """Two functions give ``key`` different values, and this process has one environment."""
        config = self.config_path.read_text(encoding="utf-8") if self.config_path.is_file() else ""
        texts = [config, *(v for f in self.plan.functions.values() for v in f.environment.values())]
        warn_of_clash(texts, key, self._env_owners[key], logical_id)

    def _localise(self, value: str) -> str:
        """An HTTP API's deployed URL in an environment value becomes the gateway's, once it runs."""
        return value if self.gateway is None else localise_api_url(value, self.gateway.url)

    def _relocalise_loaded_environment(self) -> None:
        """Functions loaded before the gateway started get its URL too (read at call time)."""
        for logical_id in self._functions:
            for key, value in self.plan.functions[logical_id].environment.items():
                if key not in self.overrides and names_local_api(value):
                    self._env.set(key, self._localise(value))


def _provider_of(config_path: Path) -> dict[str, str]:
    """The config's provider as the template's parameters (``provider_parameters``)."""
    from lockgate.config import load_config

    name = load_config(config_path).provider.name if config_path.is_file() else "anthropic"
    return provider_parameters(name)
