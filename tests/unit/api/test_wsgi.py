"""The WSGI entry point builds nothing at import and builds once."""

import threading
from typing import Any

import webob

from resize_sched.api import wsgi


def test_config_files_from_the_environment() -> None:
    assert wsgi.config_files({}) is None
    assert wsgi.config_files({wsgi.CONFIG_ENV: " "}) is None
    assert wsgi.config_files({wsgi.CONFIG_ENV: "/a.conf, /b.conf"}) == ["/a.conf", "/b.conf"]


class _Deployment:
    def app(self, environ: dict[str, Any], start_response: Any) -> Any:
        return webob.Response(body=b"ok")(environ, start_response)


def test_lazy_application_builds_once_on_first_request() -> None:
    built: list[int] = []

    def factory() -> Any:
        built.append(1)
        return _Deployment()

    application = wsgi.LazyApplication(factory)  # type: ignore[arg-type]
    assert built == []
    threads = [
        threading.Thread(target=webob.Request.blank("/").get_response, args=(application,))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert built == [1]
    assert webob.Request.blank("/").get_response(application).body == b"ok"


def test_module_application_is_lazy() -> None:
    assert isinstance(wsgi.application, wsgi.LazyApplication)
    assert wsgi.application._deployment is None
