"""SQLAlchemy 2.0 tables: tuning jobs, their training jobs, and metric points.

Times are UTC seconds since the epoch (floats), the same on SQLite and PostgreSQL. A metric value
of NULL means NaN (SQLite cannot store NaN; PostgreSQL could, but both read back alike).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class TuningJobRow(Base):
    __tablename__ = "tuning_jobs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True, index=True)
    status: Mapped[str] = mapped_column(String(32), index=True)
    status_reason: Mapped[str | None] = mapped_column(Text)
    definition: Mapped[dict[str, Any]] = mapped_column(JSON)
    stop_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[float] = mapped_column(Float)
    ended_at: Mapped[float | None] = mapped_column(Float)
    warm_start: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # tuner.warm_start
    strategy_state: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # Strategy.describe()
    pauses: Mapped[list[list[float]] | None] = mapped_column(JSON)  # [ended, reopened] pairs

    training_jobs: Mapped[list[TrainingJobRow]] = relationship(
        back_populates="tuning_job", cascade="all, delete-orphan"
    )


class TrainingJobRow(Base):
    __tablename__ = "training_jobs"
    __table_args__ = (
        Index("ix_training_jobs_tuning_number", "tuning_job_id", "number", unique=True),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tuning_job_id: Mapped[int] = mapped_column(ForeignKey("tuning_jobs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(160), unique=True, index=True)
    number: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(32))
    objective_status: Mapped[str] = mapped_column(String(32))
    hyperparameters: Mapped[dict[str, Any]] = mapped_column(JSON)
    objective: Mapped[float | None] = mapped_column(Float)
    failure_reason: Mapped[str | None] = mapped_column(Text)
    exit_code: Mapped[int | None] = mapped_column(Integer)
    handle: Mapped[str | None] = mapped_column(String(256))
    workdir: Mapped[str | None] = mapped_column(Text)
    gpus: Mapped[str | None] = mapped_column(Text)  # 8 UUID-style ids join to 327 characters
    created_at: Mapped[float] = mapped_column(Float)
    started_at: Mapped[float | None] = mapped_column(Float)  # launched (submitted to a queue)
    running_at: Mapped[float | None] = mapped_column(Float)  # its program began running
    ended_at: Mapped[float | None] = mapped_column(Float)
    artifacts_uri: Mapped[str | None] = mapped_column(Text)  # where its outputs were uploaded

    tuning_job: Mapped[TuningJobRow] = relationship(back_populates="training_jobs")


class MetricPointRow(Base):
    __tablename__ = "metric_points"
    __table_args__ = (Index("ix_metric_points_job_seq", "training_job_id", "seq"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    training_job_id: Mapped[int] = mapped_column(ForeignKey("training_jobs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(256))
    value: Mapped[float | None] = mapped_column(Float)
    seq: Mapped[int] = mapped_column(Integer)
    timestamp: Mapped[float] = mapped_column(Float)
