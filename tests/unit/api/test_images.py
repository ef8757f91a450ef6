"""The image stand-in (resize_sched.all_in_one.images) and the imageRef check (api/glance.py)."""

from typing import Any

import pytest
import webob
from keystoneauth1 import exceptions as ks_exc

from resize_sched.all_in_one.images import DEFAULT_IMAGES, Image, ImageApp
from resize_sched.api import faults, glance

APP = ImageApp()
CIRROS = next(i for i in DEFAULT_IMAGES if i.name == "cirros")
TOKEN = {"X-Auth-Token": "admin:admin"}


def _get(path: str, **headers: str) -> webob.Response:
    req = webob.Request.blank(path, headers=headers, base_url="http://api.test/image")
    return req.get_response(APP)


def test_versions_and_auth() -> None:
    root = _get("/")
    assert root.status_int == 300
    assert root.json["versions"][0]["links"][0]["href"] == "http://api.test/image/v2/"
    assert _get("/v2/images").status_int == 401


def test_list_filters_and_pages() -> None:
    every = _get("/v2/images", **TOKEN).json["images"]
    assert sorted(i["name"] for i in every) == sorted(i.name for i in DEFAULT_IMAGES)
    named = _get("/v2/images?name=cirros", **TOKEN).json["images"]
    assert [(i["id"], i["min_disk"], i["min_ram"]) for i in named] == [(CIRROS.id, 1, 64)]
    assert _get("/v2/images?name=nope", **TOKEN).json["images"] == []
    pages, link = [], "/v2/images?limit=2"
    while link:
        page = _get(link, **TOKEN).json
        pages.append([i["id"] for i in page["images"]])
        link = page.get("next")
    assert [len(p) for p in pages] == [2, 1]
    assert sum(pages, []) == [i["id"] for i in every]


def test_show_and_unknown() -> None:
    shown = _get(f"/v2/images/{CIRROS.id}", **TOKEN).json
    assert shown["name"] == "cirros" and shown["status"] == "active"
    assert _get("/v2/images/00000000-0000-0000-0000-000000000000", **TOKEN).status_int == 404
    assert webob.Request.blank("/v2/images", method="POST").get_response(APP).status_int == 405


def test_ids_are_stable() -> None:
    assert Image("cirros").id == CIRROS.id != Image("other").id


# -- the check -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("memory_mb", "root_gb", "problem"),
    [
        (64, 1, None),
        (63, 1, "memory is too small"),
        (64, 0, None),  # a 0 GiB root disk is not checked, as in Nova
        (64, 2, None),
    ],
)
def test_check_image_min_ram_and_min_disk(
    memory_mb: int, root_gb: int, problem: str | None
) -> None:
    image = CIRROS.view()
    if problem is None:
        glance.check_image(image, CIRROS.id, memory_mb, root_gb)
    else:
        with pytest.raises(faults.BadRequest, match=problem):
            glance.check_image(image, CIRROS.id, memory_mb, root_gb)


def test_check_image_disk_and_size_and_status() -> None:
    big = Image("big", min_disk=10, size=30 * 1024**3).view()
    with pytest.raises(faults.BadRequest, match="at least 10 GiB"):
        glance.check_image(big, "big", 4096, 9)
    with pytest.raises(faults.BadRequest, match="is 32212254720 bytes"):
        glance.check_image(big, "big", 4096, 20)
    glance.check_image(big, "big", 4096, 30)
    with pytest.raises(faults.BadRequest, match="not active"):
        glance.check_image(dict(big, status="queued"), "big", 4096, 30)


def test_image_ref_of_block_device_mappings() -> None:
    root = {
        "uuid": CIRROS.id,
        "boot_index": 0,
        "source_type": "image",
        "destination_type": "local",
    }
    # What openstackclient sends: imageRef and the same image as the local root.
    assert (
        glance.image_ref_of({"imageRef": CIRROS.id, "block_device_mapping_v2": [root]})
        == CIRROS.id
    )
    assert glance.image_ref_of({"block_device_mapping_v2": [root]}) == CIRROS.id
    assert (
        glance.image_ref_of({"imageRef": f"http://x/images/{CIRROS.id}"})
        == f"http://x/images/{CIRROS.id}"
    )
    assert glance.image_ref_of({}) is None
    volume = dict(root, destination_type="volume", volume_size=1)
    for body in (
        {"block_device_mapping_v2": [volume]},
        {"block_device_mapping_v2": [root, dict(root, boot_index=1, source_type="blank")]},
        {"block_device_mapping": [{"volume_id": "v", "device_name": "vda"}]},
    ):
        with pytest.raises(faults.BadRequest, match="no volumes"):
            glance.image_ref_of(body)
    with pytest.raises(faults.BadRequest, match="not the imageRef"):
        glance.image_ref_of({"imageRef": "other", "block_device_mapping_v2": [root]})


class _Response:
    def __init__(self, status: int, body: Any = None) -> None:
        self.status_code = status
        self._body = body
        self.text = str(body)

    def json(self) -> Any:
        if self._body is None:
            raise ValueError("no JSON")
        return self._body


class _Adapter:
    """Answers GET /v2/images/{id} from the stand-in app, or fails as told."""

    def __init__(self, fail: Exception | None = None, status: int | None = None) -> None:
        self.fail = fail
        self.status = status
        self.paths: list[str] = []

    def get(self, path: str, **kwargs: Any) -> _Response:
        self.paths.append(path)
        if self.fail is not None:
            raise self.fail
        if self.status is not None:
            return _Response(self.status, None)
        answer = _get(path, **TOKEN)
        return _Response(answer.status_int, answer.json if answer.status_int == 200 else None)


def test_image_client_answers() -> None:
    client = glance.ImageClient(_Adapter())
    assert client.get(CIRROS.id)["min_ram"] == 64
    assert client.get("00000000-0000-0000-0000-000000000000") is None
    down = glance.ImageClient(_Adapter(fail=ks_exc.ConnectFailure("refused")))
    with pytest.raises(glance.ImageServiceUnavailable) as caught:
        down.get(CIRROS.id)
    assert caught.value.status == 503
    with pytest.raises(glance.ImageServiceUnavailable, match="answered 500"):
        glance.ImageClient(_Adapter(status=500)).get(CIRROS.id)


def test_validated_image_without_glance_keeps_the_reference(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from resize_sched import conf as rs_conf

    conf = rs_conf.new_conf()
    conf([], default_config_files=[])
    assert glance.ImageClient.from_conf(conf) is None
    assert glance.validated_image(conf, f"http://x/images/{CIRROS.id}", 1, 1) == CIRROS.id
    for bad in ("  ", "x" * 256, "http://x/images/a\x00b"):
        with pytest.raises(faults.BadRequest, match="Invalid imageRef"):
            glance.validated_image(conf, bad, 1, 1)
    adapter = _Adapter()
    monkeypatch.setattr(glance.ImageClient, "from_conf", classmethod(lambda cls, c: cls(adapter)))
    with pytest.raises(faults.BadRequest, match="Can not find requested image"):
        glance.validated_image(conf, "00000000-0000-0000-0000-000000000000", 512, 1)
    with pytest.raises(faults.BadRequest, match="memory is too small"):
        glance.validated_image(conf, CIRROS.id, 32, 1)
    assert glance.validated_image(conf, CIRROS.id, 512, 1) == CIRROS.id
    assert adapter.paths[-1] == f"/v2/images/{CIRROS.id}"


def test_client_is_reused_until_the_group_changes() -> None:
    from keystoneauth1 import loading as ks_loading

    from resize_sched import conf as rs_conf

    conf = rs_conf.new_conf()
    conf([], default_config_files=[])
    conf.register_opts(ks_loading.get_auth_plugin_conf_options("password"), group="glance")
    conf.set_override("auth_type", "password", group="glance")
    conf.set_override("auth_url", "http://one.test/identity", group="glance")
    first = glance.ImageClient.from_conf(conf)
    assert first is not None
    assert glance.ImageClient.from_conf(conf) is first
    # An all-in-one restarted with the same configuration on new ports.
    conf.set_override("auth_url", "http://two.test/identity", group="glance")
    second = glance.ImageClient.from_conf(conf)
    assert second is not None and second is not first
    assert glance.ImageClient.from_conf(conf) is second
