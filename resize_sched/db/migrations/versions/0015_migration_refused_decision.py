"""A confirm or revert Placement refused, recorded for the sweep to retry.

While a resize waits in VERIFY_RESIZE, a revert may be refused because its
source no longer admits the old flavor (a ``max_unit`` lowered, room taken).
The refused decision and the generation of the provider Placement refused
are recorded on the migration; the conductor's sweep begins the same
decision again once that generation moves. Existing rows have none.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("migrations") as batch:
        batch.add_column(sa.Column("refused_decision", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("migrations") as batch:
        batch.drop_column("refused_decision")
