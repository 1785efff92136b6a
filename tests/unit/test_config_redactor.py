"""ConfigRedactor (Hadoop 3.3's default sensitive keys, searched not matched; a bad pattern
is a configuration error) and the administrators' ACL of dfs.cluster.administrators."""

from __future__ import annotations

import pytest

from hadoop_qjm.common.exceptions import AuthorizationException, ConfigurationError
from hadoop_qjm.common.security.authorization import ServiceAuthorizer, parse_admins
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf.config_redactor import REDACTED_TEXT, ConfigRedactor

pytestmark = pytest.mark.timeout(10)


@pytest.mark.parametrize(
    "key",
    [
        "ssl.server.keystore.password",
        "ssl.server.keystore.keypassword",
        "fs.s3a.secret.key",
        "fs.s3a.bucket.b1.secret.key",
        "fs.s3a.encryption.key",
        "fs.azure.account.key.acct.blob.core.windows.net",
        "dfs.webhdfs.oauth2.access.token",
        "hadoop.security.credential",
        "hadoop.security.sensitive-config-keys",
    ],
)
def test_sensitive_keys_are_redacted(key):
    assert ConfigRedactor(Configuration()).redact(key, "v") == REDACTED_TEXT


@pytest.mark.parametrize(
    "key", ["ssl.server.keystore.location", "dfs.http.policy", "fs.s3a.access.key", "passwords.dir"]
)
def test_other_keys_are_shown(key):
    assert ConfigRedactor(Configuration()).redact(key, "v") == "v"


def test_the_list_is_configurable_and_a_bad_pattern_is_refused():
    conf = Configuration()
    conf.set("hadoop.security.sensitive-config-keys", "^my\\.token$,\n  other")
    redactor = ConfigRedactor(conf)
    assert redactor.redact("my.token", "v") == REDACTED_TEXT
    assert redactor.redact("an.other.key", "v") == REDACTED_TEXT
    assert redactor.redact("ssl.server.keystore.password", "v") == "v"
    conf.set("hadoop.security.sensitive-config-keys", "secret$,pass(")
    with pytest.raises(ConfigurationError, match="'pass\\(' is not a regular expression"):
        ConfigRedactor(conf)


@pytest.mark.parametrize(
    ("text", "admins", "groups"),
    [
        (None, frozenset(), False),
        (" ", frozenset(), False),
        ("*", frozenset({"*"}), False),
        ("nn1,CN=hdfs-admin", frozenset({"nn1", "hdfs-admin"}), False),
        ("nn1 supergroup", frozenset({"nn1"}), True),
        (" supergroup", frozenset(), True),
    ],
)
def test_parse_admins_reads_hadoop_acls(text, admins, groups):
    assert parse_admins(text, "dfs.cluster.administrators") == (admins, groups)


def test_check_admin_uses_hadoops_words():
    authorizer = ServiceAuthorizer(frozenset({"hdfs-admin"}))
    authorizer.check_admin("/conf", "hdfs-admin")
    with pytest.raises(AuthorizationException, match="^Unauthenticated users are not"):
        authorizer.check_admin("/conf", None)
    with pytest.raises(
        AuthorizationException, match="User nn1 is unauthorized to access the page /conf"
    ):
        authorizer.check_admin("/conf", "nn1")
