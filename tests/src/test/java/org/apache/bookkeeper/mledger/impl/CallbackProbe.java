/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 */
package org.apache.bookkeeper.mledger.impl;

import java.lang.reflect.Field;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.apache.bookkeeper.mledger.AsyncCallbacks;
import org.apache.bookkeeper.mledger.ManagedLedgerException;

/**
 * Callbacks that record how often and how they fired, and whether they fired while the cursor's
 * {@code pendingMarkDeleteOps} monitor or its lock was held by the calling thread (upstream
 * deadlocked there: #15971, #26570).
 */
final class CallbackProbe {
    private final ManagedCursorImpl cursor;
    private final ReentrantReadWriteLock cursorLock;
    final List<String> violations = new CopyOnWriteArrayList<>();

    CallbackProbe(ManagedCursorImpl cursor) {
        this.cursor = cursor;
        this.cursorLock = cursorLock(cursor);
    }

    // The field is protected from 4.2 on and private on 4.0.
    private static ReentrantReadWriteLock cursorLock(ManagedCursorImpl cursor) {
        try {
            Field f = ManagedCursorImpl.class.getDeclaredField("lock");
            f.setAccessible(true);
            return (ReentrantReadWriteLock) f.get(cursor);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /** One operation's callback: its outcome future and its call count. */
    final class Outcome {
        final String name;
        final CompletableFuture<Void> future = new CompletableFuture<>();
        final AtomicInteger calls = new AtomicInteger();
        // The rate limiter's "accepted, not durable" signal (ours only; upstream's interfaces lack it).
        final CompletableFuture<Long> accepted = new CompletableFuture<>();
        volatile long firedNanos;

        Outcome(String name) {
            this.name = name;
        }

        void accepted() {
            if (!accepted.complete(System.nanoTime())) {
                violations.add(name + " accepted more than once");
            }
            if (future.isDone()) {
                violations.add(name + " accepted after it completed");
            }
            checkNoLockHeld("accepted");
        }

        void fired(Throwable failure) {
            firedNanos = System.nanoTime();
            if (calls.incrementAndGet() > 1) {
                violations.add(name + " fired " + calls.get() + " times");
            }
            checkNoLockHeld("fired");
            if (failure == null) {
                future.complete(null);
            } else {
                future.completeExceptionally(failure);
            }
        }

        private void checkNoLockHeld(String what) {
            if (Thread.holdsLock(cursor.pendingMarkDeleteOps)) {
                violations.add(name + " " + what + " while holding the pendingMarkDeleteOps monitor");
            }
            if (cursorLock.isWriteLockedByCurrentThread() || cursorLock.getReadHoldCount() > 0) {
                violations.add(name + " " + what + " while holding the cursor lock");
            }
        }

        boolean succeeded() {
            return future.isDone() && !future.isCompletedExceptionally();
        }
    }

    Outcome newOutcome(String name) {
        return new Outcome(name);
    }

    AsyncCallbacks.MarkDeleteCallback markDelete(Outcome outcome) {
        return new AsyncCallbacks.MarkDeleteCallback() {
            @Override
            public void markDeleteComplete(Object ctx) {
                outcome.fired(null);
            }

            @Override
            public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
                outcome.fired(exception);
            }

            @Override
            public void markDeleteAccepted(Object ctx) {
                outcome.accepted();
            }
        };
    }

    AsyncCallbacks.DeleteCallback delete(Outcome outcome) {
        return new AsyncCallbacks.DeleteCallback() {
            @Override
            public void deleteComplete(Object ctx) {
                outcome.fired(null);
            }

            @Override
            public void deleteFailed(ManagedLedgerException exception, Object ctx) {
                outcome.fired(exception);
            }

            @Override
            public void deleteAccepted(Object ctx) {
                outcome.accepted();
            }
        };
    }

    AsyncCallbacks.ResetCursorCallback reset(Outcome outcome) {
        return new AsyncCallbacks.ResetCursorCallback() {
            @Override
            public void resetComplete(Object ctx) {
                outcome.fired(null);
            }

            @Override
            public void resetFailed(ManagedLedgerException exception, Object ctx) {
                outcome.fired(exception);
            }
        };
    }
}
