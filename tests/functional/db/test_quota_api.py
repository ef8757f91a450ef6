"""The quota data API on every backend: limits set in one transaction,
usage counted from the rows, key pairs and flavor access unique."""

import pytest

from resize_sched import conf as rs_conf
from resize_sched import exception, quota
from resize_sched.db.api import Database


def _conf() -> object:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    return conf


def test_limits_set_replace_and_fall_back(db: Database) -> None:
    conf = _conf()
    db.quota_set_limits("p", {"cores": 4, "ram": 1024})
    db.quota_set_limits("p", {"cores": 6})
    db.quota_set_limits("p", {"cores": 2}, user_id="u")
    db.quota_class_set_limits(quota.DEFAULT_CLASS, {"instances": 3})
    project = quota.limits(db, conf, "p")
    user = quota.limits(db, conf, "p", "u")
    assert (project["cores"], project["ram"], project["instances"]) == (6, 1024, 3)
    assert (user["cores"], user["ram"]) == (2, 1024)
    assert quota.defaults(db, conf)["instances"] == 3
    assert quota.limits(db, conf, "other")["cores"] == 20
    assert db.quota_destroy("p", "u") == 1
    assert quota.limits(db, conf, "p", "u")["cores"] == 6
    assert db.quota_destroy("p") == 2
    assert quota.limits(db, conf, "p")["cores"] == 20


def test_usage_counts_live_servers_at_their_flavor(db: Database) -> None:
    small = db.flavor_create("small", 1, 512, 1, flavorid="small")
    big = db.flavor_create("big", 4, 2048, 1, flavorid="big")
    db.server_create(name="a", project_id="p", user_id="u", flavor=small)
    db.server_create(name="b", project_id="p", user_id="v", flavor=big)
    gone = db.server_create(name="c", project_id="p", user_id="u", flavor=big)
    db.server_create(name="d", project_id="q", user_id="u", flavor=big)
    db.server_delete(gone.uuid)
    db.keypair_create("u", "k", "ssh-rsa AAAA", "aa:bb")
    assert db.quota_usage("p") == {
        "instances": 2,
        "cores": 5,
        "ram": 2560,
        "key_pairs": 0,
        "server_groups": 0,
    }
    assert db.quota_usage("p", "u") == {
        "instances": 1,
        "cores": 1,
        "ram": 512,
        "key_pairs": 1,
        "server_groups": 0,
    }


def test_key_pairs_are_unique_per_user(db: Database) -> None:
    db.keypair_create("u", "k", "ssh-rsa AAAA", "aa:bb")
    with pytest.raises(exception.KeyPairExists):
        db.keypair_create("u", "k", "ssh-rsa BBBB", "cc:dd")
    db.keypair_create("v", "k", "ssh-rsa BBBB", "cc:dd")
    assert [k.public_key for k in db.keypair_list("u")] == ["ssh-rsa AAAA"]
    db.keypair_delete("u", "k")
    with pytest.raises(exception.KeyPairNotFound):
        db.keypair_delete("u", "k")
    assert db.keypair_count("v") == 1


def test_flavor_access_add_remove(db: Database) -> None:
    flavor = db.flavor_create("private", 1, 512, 1, flavorid="private", is_public=False)
    assert db.flavor_access_add("private", "p") == ["p"]
    assert db.flavor_access_add("private", "a") == ["a", "p"]
    with pytest.raises(exception.FlavorAccessExists):
        db.flavor_access_add("private", "p")
    assert db.flavor_shared_with("p") == {flavor.id}
    assert db.flavor_access_remove("private", "p") == ["a"]
    with pytest.raises(exception.FlavorAccessNotFound):
        db.flavor_access_remove("private", "p")
    with pytest.raises(exception.FlavorNotFound):
        db.flavor_access_add("missing", "p")
