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
package org.apache.pulsar.broker.service.persistent;

import org.apache.bookkeeper.mledger.Position;

/**
 * The log lines of a replication held at a message the remote cluster refuses ({@link ReplicationRetryBackoff}):
 * what an operator reads, bounded to one WARN when the hold starts, one summary per interval, one INFO when it
 * ends. One implementation per logging API of the line ({@code ReplicationHoldLogger}: SLF4J on 4.x, the
 * structured logger on 5.x), so that the backoff's rules are the same on every line.
 */
public interface ReplicationHoldLog {

    /**
     * The hold after one refusal.
     *
     * @param held the first refused position not stored since
     * @param heldMillis how long the topic has been held
     * @param attempts the resends scheduled since it became held
     * @param refusals the refusals since the last summary line
     * @param delayMillis the delay of the resend this refusal scheduled
     * @param reason the remote's reason, bounded
     */
    record Hold(Position held, long heldMillis, int attempts, int refusals, long delayMillis, String reason) {
    }

    /** The topic became held: the one WARN, with what the operator can do. */
    void held(Hold hold, long maxDelayMillis);

    /** The topic is still held: at most one line per {@code intervalMillis}. */
    void stillHeld(Hold hold, long intervalMillis);

    /** Any other refusal while held: debug level only. */
    void refusedAgain(Hold hold);

    /** The remote stored {@code stored}, which ends the hold at {@code held}. */
    void resumed(Position stored, Position held, long heldMillis, int attempts);

    /** The held entry left the backlog (an operator skipped it, it expired). */
    void released(Position held, String why);

    /** A resend came due after the replicator stopped. */
    void droppedAfterStop();

    /** A resend threw when it started. */
    void retryFailed(Throwable cause);
}
