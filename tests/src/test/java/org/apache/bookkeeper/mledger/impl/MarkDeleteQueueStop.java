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

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A stop for one thread between a mark-delete's apply and its queueing: {@link ManagedLedgerMBeanImpl#addMarkDeleteOp}
 * is the first call of {@code internalAsyncMarkDelete}, made off the cursor's lock and outside the
 * {@code pendingMarkDeleteOps} monitor on every line (checked at each stop: a stop under either would deadlock the
 * caller, so the thread goes on and {@link #stoppedUnderLock()} says so). An ack the limiter throttles, and every
 * ack of a non-durable cursor, never get there. It replaces the ledger's final {@code mbean} field by reflection,
 * which JDK 26 warns about (JEP 500): a test-only seam, with no other point between the two to stop at.
 */
final class MarkDeleteQueueStop extends ManagedLedgerMBeanImpl {
    private final ManagedCursorImpl cursor;
    private final ReentrantReadWriteLock cursorLock;
    private volatile Thread armed;
    private volatile Thread stopped;
    private volatile boolean underLock;
    private volatile CountDownLatch arrived = new CountDownLatch(0);
    private volatile CountDownLatch release = new CountDownLatch(0);

    private MarkDeleteQueueStop(ManagedLedgerImpl ledger, ManagedCursorImpl cursor, ReentrantReadWriteLock lock) {
        super(ledger);
        this.cursor = cursor;
        this.cursorLock = lock;
    }

    /** Puts the stop into the ledger of {@code cursor}. */
    static MarkDeleteQueueStop install(ManagedCursorImpl cursor) {
        ManagedLedgerImpl ledger = (ManagedLedgerImpl) cursor.getManagedLedger();
        try {
            ReentrantReadWriteLock lock =
                    (ReentrantReadWriteLock) ExplorerHarness.field(ManagedCursorImpl.class, "lock").get(cursor);
            MarkDeleteQueueStop stop = new MarkDeleteQueueStop(ledger, cursor, lock);
            ExplorerHarness.field(ManagedLedgerImpl.class, "mbean").set(ledger, stop);
            return stop;
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The next mark-delete {@code t} makes stops there until {@link #release()}; {@code t} is not started yet. */
    void arm(Thread t) {
        arrived = new CountDownLatch(1);
        release = new CountDownLatch(1);
        stopped = null;
        underLock = false;
        armed = t;
    }

    /** Called by the armed thread's runnable when it ends, so that waiting for the stop does not wait in vain. */
    void done() {
        arrived.countDown();
    }

    /** Waits until the armed thread stopped or ended; true if it stopped. */
    boolean awaitStopped(Thread t, long seconds) throws InterruptedException {
        boolean reached = arrived.await(seconds, TimeUnit.SECONDS);
        armed = null;
        return reached && stopped == t;
    }

    boolean stoppedUnderLock() {
        return underLock;
    }

    void release() {
        release.countDown();
    }

    @Override
    public void addMarkDeleteOp() {
        if (Thread.currentThread() == armed) {
            armed = null;
            if (Thread.holdsLock(cursor.pendingMarkDeleteOps) || cursorLock.isWriteLockedByCurrentThread()
                    || cursorLock.getReadHoldCount() > 0) {
                underLock = true;
            } else {
                stopped = Thread.currentThread();
                arrived.countDown();
                awaitUninterruptibly(release);
            }
        }
        super.addMarkDeleteOp();
    }

    private static void awaitUninterruptibly(CountDownLatch latch) {
        boolean interrupted = false;
        while (true) {
            try {
                latch.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
